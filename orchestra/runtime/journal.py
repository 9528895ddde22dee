"""The step journal as the runtime uses it: replay a completed step, run a new one.

Each model call, tool call and summary inside a task is step ``n`` of the task's
current retry. Before running step ``n`` the journal is consulted: a completed
step returns its recorded output without running; a failed one re-raises its
error; a step that was only *started* (in flight at a crash) runs again. A step
whose recorded name differs from the requested one means the code or inputs
changed since the crash, and raises :class:`DeterminismError`.

Every step goes through :meth:`Journal.run_deferred` (``run`` commits it at once): model
calls, Python tools and MCP calls alike. A step that acts outside the process by rules of
its own (an MCP call) gives them as :class:`SendRules`: they decide before each send
whether it goes out, and a send whose answer was lost (:class:`LostAnswer`) is decided
again, never recorded as the step's outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from orchestra._errors import DeterminismError, OrchestraError
from orchestra._types import Step, StepKind, Task
from orchestra.models.base import Model, ModelRequest, ModelResponse, Usage
from orchestra.runtime.deltas import STREAMED, DeltaPace, EventAppender, ask, delta_writer
from orchestra.store.protocol import Lease, StepRecorder, StepResult, Writes


def usage_record(usage: Usage) -> list[int]:
    """A call's token counts as its journal record keeps them: input, output, cached
    input, cache writes, reasoning (records from before the last three hold two)."""
    return [usage.input_tokens, usage.output_tokens, usage.cached_input_tokens,
            usage.cache_write_tokens, usage.reasoning_tokens]


class RecordedStepError(OrchestraError):
    """A step failed before the crash; replay raises its recorded error again."""


class LostAnswer(Exception):
    """Raised by a step function whose call went out and whose answer is lost (its MCP
    server ended during it): the step's :class:`SendRules` decide whether it goes again."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


@dataclass(slots=True)
class Outcome:
    """What a step function returns: its output, usage and the board writes to commit."""

    output: Any
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    writes: Writes | None = None


@dataclass(slots=True)
class PendingStep:
    """A step that ran but is not committed yet (the caller commits it with more)."""

    result: StepResult
    writes: Writes | None


class SendRules(Protocol):
    """The rules of a step that acts outside the process and may have acted when its
    answer was lost (an MCP call). Without them a step found in flight simply runs again,
    and a step function's failure is recorded as its outcome; with them, a failure leaves
    the step in flight (started: decided again on resume)."""

    async def before_send(self, sent: int, lost: str | None) -> Outcome | None:
        """Before each send of the step: ``sent`` sends are journaled already, the last
        one's answer lost through ``lost`` (None: none was sent). None: send it (again);
        an outcome: record that as the step's, nothing sent. Raising leaves the step as
        it is."""
        ...


class JournalStore(StepRecorder, EventAppender, Protocol):
    """What the journal writes: each step's start and outcome (with its writes), and a
    streaming model call's deltas as events."""


class Journal:
    """Numbered, durable steps of one task retry."""

    def __init__(self, store: JournalStore, task: Task, lease: Lease, agent_id: str,
                 recorded: list[Step],
                 on_commit: Callable[[Writes | None], None] | None = None, *,
                 streams: bool = False, pace: DeltaPace = STREAMED) -> None:
        self.store = store
        self.task = task
        self.lease = lease
        self.agent_id = agent_id
        self.recorded = {s.step: s for s in recorded}
        self.on_commit = on_commit
        self.streams, self.pace = streams, pace
        self._next = 1
        self.replayed = 0
        self.executed = 0
        self._starts: list[asyncio.Future[None]] = []

    def reserve(self) -> int:
        """Take the next step number (concurrent tool calls reserve theirs in call order)."""
        n = self._next
        self._next += 1
        return n

    def is_recorded(self, n: int) -> bool:
        """Step ``n`` completed before (it replays: no call, nothing to pay)."""
        rec = self.recorded.get(n)
        return rec is not None and rec.status == "completed"

    def lookup(self, n: int, kind: StepKind, name: str) -> Step | None:
        """The recorded step ``n`` if it completed or failed; checks it is the same step."""
        rec = self.recorded.get(n)
        if rec is None:
            return None
        if (rec.kind, rec.name) != (kind, name):
            raise DeterminismError(self.task.id, n, f"{rec.kind}:{rec.name}", f"{kind}:{name}")
        if rec.status == "completed":
            self.replayed += 1
            return rec
        if rec.status == "failed":
            raise RecordedStepError(f"task {self.task.id} step {n} ({kind} {name}) failed "
                                    f"before: {rec.error}")
        return None  # started but never finished: it was in flight, run it again

    async def ask(self, model: Model, request: ModelRequest, n: int) -> ModelResponse:
        """Model step ``n``'s reply; with ``streams`` (the model is a ``StreamingModel``)
        the answer reaches the run's event log while it is written (``runtime.deltas``)."""
        return await ask(model, request, delta_writer(
            self.store, self.task, self.agent_id, n, self.recorded.get(n), self.pace)
            if self.streams else None)

    async def _start(self, n: int, kind: StepKind, name: str, digest: str, *,
                     wait: bool) -> asyncio.Future[None] | None:
        """Journal step ``n`` started; returns the start still committing (not waited)."""
        if n == 1 and kind == "model" and n not in self.recorded:
            # the claim that took this attempt journals it: the store counts each claim
            # of a retry after its first as a reissue of the retry's first step
            return None
        start = self.store.start_step(self.task.id, self.task.retries, n, kind, name, digest,
                                      self.lease)
        if wait or n in self.recorded:
            # a recorded step looked up again is one left ``started`` by a process that died
            # (or lost its lease): a reissue, counted durably before the call runs again
            await start
            return None
        # A model call has no outside effect, so its start record need not be durable
        # before the call: it commits alongside (the store ignores a start that arrives
        # after the step's outcome). A call killed before its start commits left no trace
        # in the journal, and had no effect outside the process.
        fut = asyncio.ensure_future(start)
        fut.add_done_callback(_consume)
        self._starts.append(fut)
        return fut

    async def run_deferred(self, n: int, kind: StepKind, name: str, digest: str,
                           fn: Callable[[], Awaitable[Outcome]], *, wait_start: bool = True,
                           rules: SendRules | None = None) -> tuple[Any, PendingStep | None]:
        """Replay step ``n``, or run it and return it uncommitted (``commit`` it later).

        ``wait_start``: the ``started`` record is durable before ``fn`` runs (a step with
        no outside effect need not wait). ``rules``: the step acts outside the process
        (see :class:`SendRules`)."""
        rec = self.lookup(n, kind, name)
        if rec is not None:
            return rec.output, None
        prior = self.recorded.get(n)  # found ``started``: it was in flight at a crash
        sent, lost = (prior.attempts, "a crash") if prior is not None else (0, None)
        while True:
            if rules is not None:
                decided = await rules.before_send(sent, lost)
                if decided is not None:  # recorded as the step's outcome, never sent
                    return decided.output, self._pending(n, kind, name, digest, decided)
            start = await self._start(n, kind, name, digest, wait=wait_start)
            sent += 1
            self.executed += 1
            try:
                outcome = await fn()
            except Exception as exc:
                if rules is None:
                    await self.store.complete_step(
                        StepResult(self.task.id, self.task.retries, n, kind, name, digest,
                                   error=f"{type(exc).__name__}: {exc}"),
                        self.lease, agent_id=self.agent_id)
                    raise
                if not isinstance(exc, LostAnswer):
                    raise  # it may have acted: left in flight, decided on resume
                if start is not None:
                    await start  # the next send's start is journaled after this one's
                lost = exc.cause
                continue
            return outcome.output, self._pending(n, kind, name, digest, outcome)

    def _pending(self, n: int, kind: StepKind, name: str, digest: str,
                 outcome: Outcome) -> PendingStep:
        result = StepResult(self.task.id, self.task.retries, n, kind, name, digest,
                            outcome.output, tokens_in=outcome.tokens_in,
                            tokens_out=outcome.tokens_out, cost=outcome.cost)
        return PendingStep(result, outcome.writes)

    async def commit(self, pending: PendingStep | None) -> None:
        if pending is None:
            return
        await self.store.complete_step(pending.result, self.lease, agent_id=self.agent_id,
                                       writes=pending.writes)
        self.committed(pending.writes)

    def committed(self, writes: Writes | None) -> None:
        if self.on_commit is not None:
            self.on_commit(writes)

    async def run(self, n: int, kind: StepKind, name: str, digest: str,
                  fn: Callable[[], Awaitable[Outcome]], *, wait_start: bool = True,
                  rules: SendRules | None = None) -> Any:
        """Replay step ``n`` or run ``fn`` and record it (with its writes) atomically."""
        output, pending = await self.run_deferred(n, kind, name, digest, fn,
                                                  wait_start=wait_start, rules=rules)
        await self.commit(pending)
        return output


def _consume(fut: asyncio.Future[None]) -> None:
    if not fut.cancelled():
        fut.exception()  # a lost lease shows up again at the step's completion
