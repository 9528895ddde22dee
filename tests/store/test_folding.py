"""Which deltas a prune folds, read off the log alone: a call's deltas go when a
``step.completed`` of their task and step follows under the same claim; a call cut by a
dead worker, a call that failed, a call still in flight and a stale worker's call
written after the next claim took its task stay."""

from __future__ import annotations

from orchestra._types import DELTA_EVENT
from orchestra.store.folding import LogRow, folded_seqs

CLAIMED, DONE = "task.claimed", "step.completed"


def test_only_deltas_of_the_claim_that_completed_the_step_are_folded() -> None:
    log: list[LogRow] = [
        (1, CLAIMED, "a", None, 1),
        (2, DELTA_EVENT, "a", 1, 1), (3, DELTA_EVENT, "a", 1, 1),
        (4, DONE, "a", 1, None),  # a's step 1, completed by claim 1: 2 and 3 go
        (5, DELTA_EVENT, "a", 2, 1),  # claim 1 dies mid-answer
        (6, CLAIMED, "a", None, 2),
        (7, DELTA_EVENT, "a", 2, 1),  # claim 1 had not noticed: a stale write
        (8, DELTA_EVENT, "a", 2, 2), (9, CLAIMED, "b", None, 1),
        (10, DELTA_EVENT, "b", 1, 1),  # b's call fails: no step.completed
        (11, DELTA_EVENT, "a", 2, 2),
        (12, DONE, "a", 2, None),  # completed by claim 2: 8 and 11 go, 5 and 7 stay
        (13, DELTA_EVENT, "a", 3, 2),  # still in flight
        (14, DONE, "c", 1, None),  # a task whose claim is not in the log: nothing goes
    ]
    assert folded_seqs(log) == [2, 3, 8, 11]
    assert folded_seqs([]) == []
