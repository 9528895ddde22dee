"""The runs' methods, written once: reading runs, forking, deleting and pruning them
(see ``facade``); creating a run and changing its status are each backend's own
(``store.py``: their one-statement paths differ)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from orchestra._types import JSON, Run, RunStatus
from orchestra.store.backend import C, X
from orchestra.store.facade import Facade
from orchestra.store.protocol import NewNote, Pruned
from orchestra.store.pruning import prune


class RunFacade(Facade[X, C]):
    """Mixed into each backend's store class, which also provides ``_vacuum``."""

    async def get_run(self, run_id: str) -> Run:
        return await self._read(lambda c: self._sql.reads.get_run(c, run_id))

    async def run_statuses(self, run_ids: Sequence[str]) -> dict[str, RunStatus]:
        """The status of each of ``run_ids`` that exists, in one read (a driver watching
        many runs for a cancel from another process)."""
        ids = tuple(run_ids)
        return await self._read(lambda c: self._sql.reads.run_statuses(c, ids))

    async def list_runs(self, *, active_only: bool = False, limit: int = 100,
                        status: RunStatus | None = None, pipeline: str | None = None,
                        before: tuple[float, str] | None = None) -> list[Run]:
        """Runs newest first; ``before`` = ``(created_at, id)`` of the last run of the
        previous page (keyset pagination: stable while runs are being created)."""
        return await self._read(lambda c: self._sql.reads.list_runs(
            c, active_only, limit, status, pipeline, before))

    async def set_run_status_noting(self, run_id: str, status: RunStatus, note: NewNote, *,
                                    author: str, error: str | None = None,
                                    only_from: Collection[RunStatus] | None = None) -> Run:
        """Change a run's status and post the note that says why, in one transaction: a
        kill leaves both or neither, so a resumed run that decides again notes it once."""
        allowed = None if only_from is None else frozenset(only_from)
        sql = self._sql

        async def op(tx: X) -> Run:
            run = await sql.runs.set_run_status(tx, run_id, status, error, allowed)
            await sql.board.post_note(tx, run_id, author, note)
            return run

        return await self._write(op)

    async def move_version(self, run_id: str, old: str, new: str, data: JSON) -> Run:
        """Move a run to another version (see ``Blackboard.move_version``)."""
        return await self._write(lambda tx: self._sql.versions.move_version(
            tx, run_id, old, new, data))

    async def fork_run(self, run_id: str, at_seq: int, *, fork_id: str | None = None,
                       input: JSON = None) -> Run:
        """A new run whose board, tasks and agents' histories are as they were right after
        event ``at_seq`` of ``run_id`` (widened to the end of that event's write).

        Resuming the fork replays the steps finished by then from its journal and runs
        the rest anew. ``input`` (when not None) replaces the run's input, e.g. to
        record other models for the fork. The source run is not changed.
        """
        return await self._write(lambda tx: self._sql.fork.fork_run(tx, run_id, at_seq,
                                                                    fork_id, input))

    async def delete_run(self, run_id: str) -> None:
        """Delete a finished run and everything it owns; a live run must be cancelled first."""
        await self._write(lambda tx: self._sql.retention.delete_runs(tx, [run_id]))

    async def prune_runs(self, *, finished_before: float | None = None,
                         keep: int | None = None, vacuum: bool = False,
                         batch_rows: int = 20_000, fold: bool = True) -> Pruned:
        """Delete finished runs (updated before ``finished_before``, and beyond the ``keep``
        most recently finished) completely, each write at most about ``batch_rows`` rows.

        With ``fold``, the runs it keeps (every finished run, and with ``finished_before``
        every run untouched since then) have their completed calls' token deltas folded
        into their steps (``store/folding.py``: the step holds the whole answer; the text
        of an interrupted call stays until the run goes).

        Freed space is reused by later writes; ``vacuum`` also returns it to the
        operating system where the backend can (``_vacuum``: SQLite's
        ``incremental_vacuum`` or ``VACUUM``, PostgreSQL's ``VACUUM``) and reports by
        how much the store shrank.
        """
        runs, rows, folded = await prune(self._read, self._write, self._sql.retention,
                                         finished_before=finished_before, keep=keep,
                                         batch_rows=batch_rows, fold=fold)
        freed = await self._vacuum() if vacuum else 0
        return Pruned(runs=runs, rows=rows, freed_bytes=freed, folded=folded)

    async def _vacuum(self) -> int:
        """Return the store's free space to the operating system; the bytes it shrank by."""
        raise NotImplementedError
