"""``orchestra run --dry-run``: what a run would use and roughly cost, before it runs.

It states each role's model and that model's price, and, when the store holds finished
runs of the same pipeline, the median of their costs and tokens: an order of magnitude
from history, labelled as an estimate (a run's cost depends on what its models answer).
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from orchestra.cli.cost_text import usd
from orchestra.cli.exit_codes import EXIT_OK
from orchestra.cli.inspect_cmds import emit
from orchestra.coordinator.pipeline import Pipeline
from orchestra.models.prices import Price, PriceBook, Pricer, layered
from orchestra.store import Blackboard, RunStore
from orchestra.store import url as store_url

PAST_RUNS = 50
"""How many of the pipeline's latest completed runs the estimate looks at."""


def _rates(price: Price | None) -> str:
    if price is None:
        return "no price (costs are not counted)"
    cached = "" if price.cached_input is None else f", cached input ${price.cached_input:g}"
    return f"${price.input:g} in, ${price.output:g} out{cached} per million tokens"


async def history(store: RunStore, pipeline: str) -> dict[str, Any] | None:
    """Medians of the pipeline's latest completed runs, or None when there are none."""
    runs = await store.list_runs(status="completed", pipeline=pipeline, limit=PAST_RUNS)
    if not runs:
        return None
    return {"runs": len(runs), "median_cost": statistics.median(r.cost for r in runs),
            "median_tokens": statistics.median(r.tokens_in + r.tokens_out for r in runs)}


def model_name(pipeline: Pipeline, role: str, settings: Mapping[str, Any]) -> str:
    """The model ``role`` would use, named without loading it (no key, no network):
    its ``--model`` spec, $ORCHESTRA_MODEL, or the model the role or pipeline declares."""
    model: Any = ((settings.get("models") or {}).get(role) or settings.get("model")
                  or os.environ.get("ORCHESTRA_MODEL"))
    if model is None:
        model = type(pipeline.role(role)).model or pipeline.model
    if model is None:
        return "(no model)"
    return model if isinstance(model, str) else str(getattr(model, "name", model))


async def dry_run(args: argparse.Namespace, pipeline: Pipeline, settings: Mapping[str, Any],
                  prices: PriceBook,
                  open_store: Callable[..., AbstractAsyncContextManager[Blackboard]]) -> int:
    """Print the plan and the estimate; create nothing. ``settings``: the run's settings
    as they would be recorded (``--model`` specs by role)."""
    pricer = Pricer(layered(pipeline.prices, prices))
    roles: list[dict[str, Any]] = []
    lines = []
    for role in pipeline.roles:
        name = model_name(pipeline, role.name, settings)
        price = pricer.rates(name)
        roles.append({"role": role.name, "model": name,
                      "price": None if price is None else {
                          "input": price.input, "output": price.output,
                          "cached_input": price.cached_input}})
        lines.append(f"  {role.name:<12} {name:<36} {_rates(price)}")
    name = pipeline.reference() or pipeline.name
    past = None
    if store_url.exists(args.db):
        async with open_store(args, must_exist=True, read_only=True) as store:
            past = await history(store, name)
    data = {"pipeline": name, "roles": roles, "estimate": past,
            "max_cost": args.max_cost, "max_tokens": args.max_tokens}
    lines.insert(0, f"dry run of {name}: nothing is started")
    if past is None:
        lines.append("  estimate: none (no completed run of this pipeline in "
                     f"{store_url.label(args.db)} to go by)")
    else:
        lines.append(f"  ESTIMATE (median of its last {past['runs']} completed run(s), not a "
                     f"quote): {usd(past['median_cost'])}, {past['median_tokens']:.0f} tokens")
    emit(args, data, "\n".join(lines))
    return EXIT_OK
