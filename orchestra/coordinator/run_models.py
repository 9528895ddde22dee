"""Which model each role of a run uses: shared by the CLI and the server.

A run records what it was started with (``{"model": default spec, "models": {role:
spec}, "max_tokens": cap}``) as its *settings*, in its ``run.created`` event, apart
from its input: the input is the pipeline's, and every key in it is the user's. A
later ``run.settings`` event replaces them (a fork with other models) and a
``run.budget`` event sets the cap (a resume with ``--max-tokens``). Any process that
later serves the run (``orchestra resume``, ``orchestra worker``, ``orchestra
serve``) builds the same models from them: :func:`recorded_settings`.

Runs created before settings had their place carry their specs in the input under
``model``/``models``/``max_tokens``; they are still read there, but only values of the
right shape (anything else under those keys was the user's own).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from orchestra._errors import UserError
from orchestra._types import Run
from orchestra.coordinator.pipeline import Pipeline
from orchestra.models.base import Model
from orchestra.store.protocol import EventLog

SETTINGS_EVENT = "run.settings"
"""Replaces a run's settings (its data is the whole new settings)."""
BUDGET_EVENT = "run.budget"
"""Sets a run's token cap (``{"max_tokens": n}``) or cost cap (``{"max_cost": usd}``) for
every later resume and worker."""
_SETTINGS_KINDS = ("run.created", SETTINGS_EVENT, BUDGET_EVENT)
"""The events :func:`recorded_settings` reads (the store filters the run's log)."""


def split_models(specs: Sequence[str]) -> tuple[str | None, dict[str, str]]:
    """``--model`` values as (default spec, per-role specs), each parsed (a typo fails now)."""
    from orchestra.models.spec import resolve_model_specs

    return resolve_model_specs(None, list(specs), environ={})


def model_settings(specs: Sequence[str], *, max_tokens: int | None = None,
                   max_cost: float | None = None) -> dict[str, Any]:
    """The settings to record with a new run: its ``--model`` specs, token and cost caps."""
    default, per_role = split_models(specs)
    settings: dict[str, Any] = {}
    if default:
        settings["model"] = default
    if per_role:
        settings["models"] = per_role
    if max_tokens is not None:
        settings["max_tokens"] = max_tokens
    if max_cost is not None:
        settings["max_cost"] = max_cost
    return settings


def with_models(settings: Mapping[str, Any], specs: Sequence[str]) -> dict[str, Any]:
    """``settings`` with ``--model`` values laid over them (a new default replaces every
    recorded per-role spec; a per-role one replaces that role's)."""
    default, per_role = split_models(specs)
    out = dict(settings)
    if default:
        out["model"] = default
        out.pop("models", None)
    if per_role:
        out["models"] = {**out.get("models", {}), **per_role}
    return out


async def recorded_settings(events: EventLog, run: Run) -> dict[str, Any]:
    """The settings ``run`` was started with, as later events changed them."""
    out = legacy_settings(run.input)
    after = 0
    while True:
        batch = await events.events(run.id, starting_after=after, limit=500,
                                    kinds=_SETTINGS_KINDS)
        for e in batch:
            data = e.data if isinstance(e.data, dict) else {}
            if e.kind == "run.created" and isinstance(data.get("settings"), dict):
                out = dict(data["settings"])
            elif e.kind == SETTINGS_EVENT:
                out = dict(data)
            elif e.kind == BUDGET_EVENT:
                if isinstance(data.get("max_tokens"), int):
                    out["max_tokens"] = data["max_tokens"]
                if isinstance(data.get("max_cost"), int | float):
                    out["max_cost"] = float(data["max_cost"])
        if len(batch) < 500:
            return out
        after = batch[-1].seq


def legacy_settings(run_input: Any) -> dict[str, Any]:
    """The specs an older orchestra wrote into a run's input, if they are specs."""
    legacy = run_input if isinstance(run_input, dict) else {}
    out: dict[str, Any] = {}
    model, models, cap = legacy.get("model"), legacy.get("models"), legacy.get("max_tokens")
    if isinstance(model, str) and _is_spec(model):
        out["model"] = model
    if isinstance(models, dict) and models and all(
            isinstance(k, str) and isinstance(v, str) and _is_spec(v) for k, v in models.items()):
        out["models"] = models
    if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
        out["max_tokens"] = cap
    return out


def _is_spec(text: str) -> bool:
    from orchestra.models.spec import parse_model_spec

    try:
        parse_model_spec(text)
    except UserError:
        return False
    return True


def models_for_run(pipeline: Pipeline, settings: Mapping[str, Any],
                   cli: Sequence[str]) -> dict[str, Model]:
    """Per-role models: CLI flags, then the run's recorded specs (``settings``, see
    :func:`recorded_settings`), then $ORCHESTRA_MODEL."""
    from orchestra.models.spec import load_model

    default, per_role = split_models(cli)
    recorded = settings.get("models") or {}
    default = default or settings.get("model") or os.environ.get("ORCHESTRA_MODEL")
    unknown = set(per_role) - {r.name for r in pipeline.roles}
    if unknown:
        raise UserError(f"--model for unknown role(s) {sorted(unknown)}; roles: "
                        f"{sorted(r.name for r in pipeline.roles)}")
    cache: dict[str, Model] = {}
    out: dict[str, Model] = {}
    for role in pipeline.roles:
        spec = per_role.get(role.name) or recorded.get(role.name) or default
        if spec is None:
            if type(role).model is not None or pipeline.model is not None:
                continue
            raise UserError(f"no model for role {role.name!r}: pass --model SPEC or set "
                            "ORCHESTRA_MODEL (e.g. openai:gpt-4.1-mini, ollama:qwen2.5-coder)")
        if spec not in cache:
            cache[spec] = load_model(spec)
        out[role.name] = cache[spec]
    return out


async def run_cap(store: EventLog, run: Run, flag: int | None) -> int | None:
    """The run's token cap: ``--max-tokens`` now (recorded, so it holds for later resumes),
    else the one its settings hold (:func:`recorded_settings`: the last recorded)."""
    if flag is not None:
        await store.append_event(run.id, BUDGET_EVENT, {"max_tokens": flag})
        return flag
    return recorded_cap(await recorded_settings(store, run))


def recorded_cap(recorded: Mapping[str, Any]) -> int | None:
    """The token cap among a run's recorded settings (:func:`recorded_settings`)."""
    cap = recorded.get("max_tokens")
    return cap if isinstance(cap, int) else None


async def run_cost_cap(store: EventLog, run: Run, flag: float | None) -> float | None:
    """The run's cost cap in USD: ``--max-cost`` now (recorded), else the recorded one."""
    if flag is not None:
        await store.append_event(run.id, BUDGET_EVENT, {"max_cost": flag})
        return flag
    cap = (await recorded_settings(store, run)).get("max_cost")
    return float(cap) if isinstance(cap, int | float) else None
