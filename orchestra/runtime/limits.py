"""The caps a task's calls must stay under: tokens and money, per run and per agent.

A cap already reached stops the task before its next turn; a money cap that the next
call *could* cross (its whole prompt uncached, plus its ``max_tokens`` at the output
price) stops it before that call, not after. Either way the task stays pending and the
run pauses (:class:`UsageLimitExceeded`); raising the cap and resuming continues it.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestra._errors import UsageLimitExceeded
from orchestra.models.base import ModelRequest
from orchestra.models.prices import Pricer
from orchestra.tokens import MESSAGE_OVERHEAD, estimate_tokens

DEFAULT_OUTPUT_BOUND = 4096
"""Output tokens a call is assumed able to spend when neither ``max_tokens`` nor the
model's context says more (for the money cap's look-ahead only)."""


@dataclass(frozen=True, slots=True)
class RunLimits:
    """Caps that stop a task with :class:`UsageLimitExceeded` (resumable after raising them)."""

    max_tokens_per_run: int | None = None
    run_tokens_used: int = 0
    max_cost_per_run: float | None = None
    """USD; the run pauses before a call that could take it past this."""
    run_cost_used: float = 0.0


@dataclass(frozen=True, slots=True)
class Spent:
    """What the run and the agent have spent so far (tokens in + out, USD)."""

    run_tokens: int
    run_cost: float
    agent_tokens: int
    agent_cost: float


def check_spent(limits: RunLimits, spent: Spent, *, run_id: str, agent: str,
                agent_tokens_cap: int | None, agent_cost_cap: float | None) -> None:
    """Raise if a cap is already reached."""
    if agent_tokens_cap is not None and spent.agent_tokens >= agent_tokens_cap:
        raise UsageLimitExceeded(
            f"agent {agent} used {spent.agent_tokens} tokens, its cap is {agent_tokens_cap} "
            "(max_tokens_per_agent); raise the cap and resume the run")
    if agent_cost_cap is not None and spent.agent_cost >= agent_cost_cap:
        raise UsageLimitExceeded(
            f"agent {agent} spent ${spent.agent_cost:.6f}, its cap is ${agent_cost_cap:g} "
            "(max_cost_per_agent); raise the cap and resume the run")
    cap = limits.max_tokens_per_run
    if cap is not None and spent.run_tokens >= cap:
        raise UsageLimitExceeded(f"run {run_id} used {spent.run_tokens} tokens, its cap is "
                                 f"{cap}; raise the cap and resume the run")
    money = limits.max_cost_per_run
    if money is not None and spent.run_cost >= money:
        raise UsageLimitExceeded(f"run {run_id} spent ${spent.run_cost:.6f}, its cost cap is "
                                 f"${money:g}; raise it (--max-cost) and resume the run")


def call_bound(pricer: Pricer, model: str, request: ModelRequest, context: int | None) -> float:
    """The most ``request`` could cost: its prompt uncached (an estimate that errs high),
    and its ``max_tokens`` (else a quarter of the context, else 4096) at the output price."""
    prompt = sum(estimate_tokens(m.content) + MESSAGE_OVERHEAD for m in request.messages)
    out = request.settings.max_tokens or (context // 4 if context else DEFAULT_OUTPUT_BOUND)
    return pricer.bound(model, prompt, out)


def check_next_call(limits: RunLimits, spent: Spent, bound: float, *, run_id: str,
                    agent: str, agent_cost_cap: float | None) -> None:
    """Raise if a call costing up to ``bound`` could cross a money cap."""
    for who, used, cap, how in ((f"run {run_id}", spent.run_cost, limits.max_cost_per_run,
                                 "--max-cost"),
                                (f"agent {agent}", spent.agent_cost, agent_cost_cap,
                                 "max_cost_per_agent")):
        if cap is not None and bound > 0 and used + bound > cap:
            raise UsageLimitExceeded(
                f"{who} spent ${used:.6f}; its next call could cost up to ${bound:.6f}, past "
                f"its cost cap of ${cap:g}: paused before the call; raise the cap ({how}) "
                "and resume the run")
