"""How the command line words money and tokens: a run's cost, its usage, its caps."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any


def usd(amount: float) -> str:
    """``$0``, ``$0.000412``, ``$1.2346``: enough digits to see a small call's cost."""
    if amount == 0:
        return "$0"
    return f"${amount:.4f}" if amount >= 0.01 else f"${amount:.6f}"


def usage_line(total: Mapping[str, Any]) -> str:
    """One line of a usage total (``run_usage(...).total.as_dict()``)."""
    tokens_in = int(total.get("input_tokens", 0))
    cached = int(total.get("cached_input_tokens", 0))
    share = f" ({100 * cached / tokens_in:.0f}% of input)" if tokens_in and cached else ""
    parts = [f"cost {usd(float(total.get('cost', 0.0)))}", f"calls {total.get('calls', 0)}",
             f"tokens in/out {tokens_in}/{total.get('output_tokens', 0)}",
             f"cached input {cached}{share}"]
    if total.get("cache_write_tokens"):
        parts.append(f"cache writes {total['cache_write_tokens']}")
    if total.get("reasoning_tokens"):
        parts.append(f"reasoning {total['reasoning_tokens']}")
    if total.get("reissued"):
        parts.append(f"{total['reissued']} call(s) re-issued after a crash (counted once; "
                     "the provider may have billed the lost call too)")
    return "  ".join(parts)


def unpriced_line(models: Collection[str]) -> str:
    """Why a cost is 0: the hosted models that have no price, and how to give one."""
    return (f"no price for {', '.join(sorted(models))}; costs are not counted (set one "
            "with --price MODEL=IN/OUT, USD per million tokens)")


def local_line(models: Collection[str]) -> str:
    """Why a cost is 0: the models ran here or were scripted (nothing billed)."""
    return f"local model: cost not counted ({', '.join(sorted(models))})"


def resume_hint(run: Mapping[str, Any], where: str) -> str:
    """How to lift the cap that paused ``run`` (a run dict): money or tokens, as its error says."""
    if "cost cap" in str(run.get("error") or ""):
        cost = float(run.get("cost", 0.0))
        flag, what = f"--max-cost {max(2 * cost, cost + 0.01):.2f}", "cost"
    else:
        used = int(run["tokens_in"]) + int(run["tokens_out"])
        flag, what = f"--max-tokens {max(2 * used, used + 1000)}", "token"
    hint = " ".join(filter(None, ("orchestra resume", str(run["id"]), where, flag)))
    return f"paused by its {what} cap; raise it to continue: {hint}"
