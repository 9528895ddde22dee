"""The coder's next step is a pure function of the answers it tried: no pytest runs here."""

from __future__ import annotations

import pytest

from agents.decide import Tried, best, decide, yielded


def t(passed: int = 0, total: int = 4, *, spec: tuple[int, int] = (0, 0),
      trusted: tuple[int, int] = (0, 0), imports: bool = True, advice: str = "") -> Tried:
    return Tried(imports=imports, spec=spec, trusted=trusted, tests=(passed, total),
                 advice=advice)


def test_an_answer_that_passes_every_test_is_accepted_at_once() -> None:
    assert decide([t(4)], rounds=4, out_of_time=False) == ("accept", 0)
    assert decide([t(1), t(4)], rounds=4, out_of_time=False) == ("accept", 1)


def test_passing_the_trusted_tests_stops_after_one_more_answer() -> None:
    vouched = t(3, spec=(2, 2), trusted=(3, 3))
    assert decide([vouched], rounds=4, out_of_time=False) == ("sample", 0)
    assert decide([vouched, vouched], rounds=4, out_of_time=False) == ("accept", 0)
    # no trusted test at all: only every test passing stops early
    assert decide([t(3), t(3)], rounds=4, out_of_time=False)[0] == "sample"


def test_the_answer_accepted_is_the_best_of_those_that_pass_the_trusted_tests() -> None:
    more = t(3, spec=(2, 2), trusted=(3, 3))
    fewer = t(2, spec=(2, 2), trusted=(3, 3))
    assert decide([more, fewer], rounds=4, out_of_time=False) == ("accept", 0)
    assert decide([fewer, more], rounds=4, out_of_time=False) == ("accept", 1)
    # an earlier answer ranked higher only by failing advice is not the one accepted
    said = "m.py has no top-level 'add'"
    assert decide([t(4, spec=(2, 2), trusted=(3, 3), advice=said), fewer], rounds=4,
                  out_of_time=False) == ("accept", 1)


def test_failing_tests_ask_for_fresh_samples_until_the_rounds_run_out() -> None:
    """A small model revising in view of its answer and a failing assertion sends the same
    file back: a new sample is the answer worth its cost."""
    steps = [decide([t(1)] * n, rounds=4, out_of_time=False)[0] for n in (1, 2, 3, 4)]
    assert steps == ["sample", "sample", "sample", "keep_best"]


def test_the_best_is_the_first_of_equals_ranked_by_what_can_be_trusted() -> None:
    first = t(2, spec=(1, 2), trusted=(1, 3))
    assert decide([first, t(2, spec=(1, 2), trusted=(1, 3))], rounds=2,
                  out_of_time=False) == ("keep_best", 0)
    # the spec's own examples beat the tester's tests, which beat nothing
    pleaser = t(4, total=5, spec=(0, 2), trusted=(2, 4))
    right = t(1, total=5, spec=(2, 2), trusted=(2, 4))
    assert best([pleaser, right]) == 1
    # an answer that does not import ranks below any that does
    assert best([t(0, imports=True), t(0, imports=False, spec=(2, 2))]) == 0


def test_a_module_that_does_not_import_is_revised_with_its_error() -> None:
    assert decide([t(0), t(0, imports=False)], rounds=4, out_of_time=False)[0] == "revise"
    assert decide([t(4, imports=False)], rounds=4, out_of_time=False)[0] == "revise"


def test_out_of_time_keeps_the_best_so_far() -> None:
    assert decide([t(3), t(1)], rounds=4, out_of_time=True) == ("keep_best", 0)
    assert decide([t(4)], rounds=4, out_of_time=True) == ("accept", 0)


def test_a_check_read_from_the_spec_advises_and_yields_when_answered_the_same_twice() -> None:
    said = "m.py has no top-level 'add'"
    # every test passes, but the check says a public name is missing: one revision
    assert decide([t(4, advice=said)], rounds=4, out_of_time=False) == ("revise", 0)
    # the same shape back: the check yields (it may be the wrong one) and the answer stands
    assert decide([t(4, advice=said), t(4, advice=said)], rounds=4,
                  out_of_time=False) == ("accept", 0)  # the first of equals
    assert yielded([t(advice=said), t(advice="other"), t(advice="other")]) == {"other"}
    # advice never makes an answer unusable: it only ranks among equals
    assert best([t(2, advice=said), t(2)]) == 1 and best([t(3, advice=said), t(2)]) == 0


def test_nothing_tried_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="at least one"):
        decide([], rounds=4, out_of_time=False)


def test_a_journaled_candidate_reads_back_as_tried() -> None:
    got = Tried.of({"score": [3, 5, 2, 1, 4, 2], "imports": False, "advice": "x"})
    assert got == Tried(imports=False, spec=(1, 2), trusted=(2, 4), tests=(3, 5), advice="x")
