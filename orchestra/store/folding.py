"""Which token deltas a prune folds into their steps, decided the same way on both backends.

A streaming model call's text reaches the run's log as ``model.delta`` events while
it is written (``runtime/deltas.py``). Once the call's step completed, the journal
holds the whole answer and the deltas only repeat it: a prune deletes them (folds them
into the step). What no record holds is kept until the run is pruned whole: the text
of a call whose process died in it (an interrupted attempt, which the next attempt's
``reissue`` marks), of a call that failed, and of a call still in flight.

Which call completed a step is read off the log itself: the ``step.completed`` event
of (task, step) completes the deltas of that task and step written under the claim in
effect then (the task's last ``task.claimed``; each delta carries its claim as
``attempt``). An adapter's own retries inside that call (``try``) are folded with it:
the step holds the answer of its last try.

Folding leaves holes in a run's ``seq``: the seqs still stored keep their order and
never repeat, so a reader resuming from any cursor, one inside the folded deltas
included, continues with the next event still stored and skips none of them. Each
backend reads the events and deletes the seqs in its own SQL (``sqlite/retention.py``,
``postgres/retention.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestra._types import DELTA_EVENT

FOLD_KINDS = (DELTA_EVENT, "step.completed", "task.claimed")
"""The events the decision reads (``kind IN (...)`` of each backend's query)."""
FOLD_KINDS_SQL = ", ".join(f"'{kind}'" for kind in FOLD_KINDS)

LogRow = tuple[int, str, str | None, int | None, int | None]
"""One event of ``FOLD_KINDS``: seq, kind, and from its data ``task``, ``step``,
``attempt`` (None where the event has none)."""


def folded_seqs(rows: Iterable[LogRow]) -> list[int]:
    """The seqs of the deltas to fold, from a run's ``FOLD_KINDS`` events in seq order."""
    claims: dict[str | None, int | None] = {}
    calls: dict[tuple[str | None, int | None, int | None], list[int]] = {}
    out: list[int] = []
    for seq, kind, task, step, attempt in rows:
        if kind == DELTA_EVENT:
            calls.setdefault((task, step, attempt), []).append(seq)
        elif kind == "task.claimed":
            claims[task] = attempt
        elif kind == "step.completed" and task in claims:
            out += calls.pop((task, step, claims[task]), [])
    return sorted(out)


def chunks(seqs: list[int], size: int) -> list[list[int]]:
    """``seqs`` in pieces of at most ``size`` (one bounded write each)."""
    return [seqs[i:i + size] for i in range(0, len(seqs), size)]
