"""How a coordinator schedules work: the settings its drive and its task executor share
(a module of its own so both read them without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass

from orchestra._types import DEFAULT_CONCURRENCY


@dataclass(frozen=True, slots=True)
class CoordinatorSettings:
    """How a coordinator schedules work."""

    concurrency: int = DEFAULT_CONCURRENCY
    """Tasks run at once by this coordinator (each role also has its own limit)."""
    lease_seconds: float = 30.0
    """A claimed task is another worker's to take after this long without a heartbeat
    (heartbeats come every third of it): a dead worker's tasks are taken over by any
    process serving the run within ``lease_seconds`` plus one heartbeat."""
    retry_base: float = 0.5
    """First retry delay in seconds; doubles per retry."""
    retry_max: float = 30.0
    """Longest retry delay in seconds."""
    poll_interval: float = 0.2
    """How often to look for work made by other processes (in-process work wakes at once)."""
    idle_poll_max: float = 2.0
    """Each look that finds nothing doubles the wait before the next, up to this: a run
    whose work another worker holds (N workers serving R runs) or whose model is slow
    costs the store R x N looks per ``idle_poll_max``, not per ``poll_interval``."""
    cancel_poll: float = 0.5
    """How often a driver reads its run's status: a cancel from another process stops the
    run's model and tool calls within this (plus ``poll_interval``), not at a heartbeat."""
    max_tokens_per_run: int | None = None
    """Stop the run (resumably) once it has used this many tokens."""
    max_cost_per_run: float | None = None
    """USD: pause the run (resumably) before a call that could take its cost past this."""
    wait_for_approvals: bool = False
    """Keep driving while tasks wait for humans; otherwise return with the run ``waiting``."""
    shared: bool = False
    """Other processes may serve the same runs (``orchestra worker``): agents then re-read
    their history from the store at every task instead of trusting this process's cache."""
    leave_idle: bool = False
    """Stop driving a run (without finishing it) once this coordinator runs none of its
    tasks and can claim none: ``orchestra worker`` drives only the runs it has work in,
    and finds the others again when they have claimable work (``claimable_runs``)."""
