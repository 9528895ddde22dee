"""What this process already knows about the work it does, so a step's write need not
read it first (on aiosqlite every statement is a hop to its thread and back).

A task's run and role never change, and this process learns them when it claims the
task, with the versions its run was on (what the claim filtered on: a run's version
does not change while a lease in it is held); an agent's last message seq it learns
when it appends to the agent's history or reads it whole, and an agent of a run this
process created starts with none.
Nothing here is trusted: the step record's trigger checks each of them (``step``), a
write that assumed wrongly writes nothing, and a wrong entry costs one read. The
store owns one ``Known`` and hands it to the writes that use it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import NamedTuple, TypeVar

from orchestra._types import Task

V = TypeVar("V")


class Before(NamedTuple):
    """What a task's end must know before it decides its rows."""

    run_id: str
    role: str
    last_seq: int
    """The agent's last message seq (0 when the write appends no messages)."""
    served: frozenset[str] | None = None
    """The versions the task's run is on one of (None: not known)."""


class Known:
    """Tasks' runs and roles and agents' last message seqs, at most ``limit`` of each
    (the oldest entry goes first)."""

    __slots__ = ("_created", "_limit", "_seqs", "_tasks")

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._tasks: dict[str, tuple[str, str, frozenset[str] | None]] = {}
        self._seqs: dict[str, int] = {}
        self._created: dict[str, None] = {}  # runs made here: their agents start empty

    def before(self, task_id: str, agent_id: str, needs_seq: bool) -> Before | None:
        """What is known for a write by ``agent_id`` on ``task_id``, or None."""
        task = self._tasks.get(task_id)
        if task is None:
            return None
        if not needs_seq:
            return Before(task[0], task[1], 0, task[2])
        seq = self._seqs.get(agent_id)
        if seq is None and task[0] in self._created and agent_id.startswith(task[0] + "/"):
            seq = 0  # its first append, unless another process appended first
        return None if seq is None else Before(task[0], task[1], seq, task[2])

    def created(self, run_id: str) -> None:
        _put(self._created, run_id, None, self._limit)

    def read(self, agent_id: str, last_seq: int) -> None:
        """A read of the agent's whole history after some seq ended at ``last_seq``; kept
        only when nothing is known (an append of this process may have ended after it)."""
        if agent_id not in self._seqs:
            _put(self._seqs, agent_id, last_seq, self._limit)

    def claimed(self, tasks: Iterable[Task], served: Collection[str] | None = None) -> None:
        """``tasks`` claimed here by a claim that took only runs on ``served`` (None: any)."""
        versions = None if served is None else frozenset(served)
        for task in tasks:
            _put(self._tasks, task.id, (task.run_id, task.role, versions), self._limit)

    def learn(self, task_id: str, before: Before, agent_id: str | None) -> None:
        """What a read found (``agent_id``: the agent whose last seq it read, if any)."""
        _put(self._tasks, task_id, (before.run_id, before.role, before.served), self._limit)
        if agent_id is not None:
            _put(self._seqs, agent_id, before.last_seq, self._limit)

    def appended(self, agent_id: str, last_seq: int) -> None:
        _put(self._seqs, agent_id, last_seq, self._limit)

    def forget(self, task_id: str, agent_id: str) -> None:
        """Drop what a write found wrong, or what a finished task no longer needs."""
        self._tasks.pop(task_id, None)
        self._seqs.pop(agent_id, None)
        self._created.pop(agent_id.partition("/")[0], None)  # its run's agents: no guess

    def ended(self, task_id: str) -> None:
        self._tasks.pop(task_id, None)


def _put(entries: dict[str, V], key: str, value: V, limit: int) -> None:
    entries.pop(key, None)  # re-inserted last: the newest
    entries[key] = value
    if len(entries) > limit:
        del entries[next(iter(entries))]
