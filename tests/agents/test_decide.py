"""The coder's choice and next step are pure functions of its candidates: no pytest runs
here. The first candidate is the floor; a later one replaces it only on evidence from
running code."""

from __future__ import annotations

import pytest

from agents.decide import Tried, best, decide


def t(passed: int = 0, total: int = 4, *, trusted: tuple[int, int] = (0, 0), imports: bool = True,
      stub: bool = False, runs: dict[str, str] | None = None,
      failed: set[str] | None = None, exports: tuple[int, int] | None = None) -> Tried:
    return Tried(imports=imports, trusted=trusted, tests=(passed, total),
                 stub=stub, runs=runs or {},
                 failed=None if failed is None else frozenset(failed), exports=exports)


def test_an_answer_that_passes_every_test_is_accepted_at_once() -> None:
    assert decide([t(4)], rounds=4, out_of_time=False) == ("accept", 0)
    assert decide([t(1), t(4)], rounds=4, out_of_time=False) == ("accept", 1)


def test_passing_the_trusted_tests_stops_after_one_more_answer() -> None:
    vouched = t(3, trusted=(2, 2))
    assert decide([vouched], rounds=4, out_of_time=False) == ("sample", 0)
    assert decide([vouched, vouched], rounds=4, out_of_time=False) == ("accept", 0)
    # no trusted test at all: only every test passing stops early
    assert decide([t(3), t(3)], rounds=4, out_of_time=False)[0] == "sample"


def test_zero_tests_is_never_a_pass() -> None:
    none = t(0, 0)
    assert decide([none], rounds=4, out_of_time=False) == ("sample", 0)
    assert decide([t(0, 0, trusted=(0, 0))] * 3, rounds=4, out_of_time=False)[0] == "sample"
    # ...but two candidates that behave alike on the smoke run's calls are evidence
    ran = {"f(1)": "=2", "f(3)": "=4"}
    assert decide([t(0, 0, runs=ran), t(0, 0, runs=ran)], rounds=4,
                  out_of_time=False) == ("accept", 0)
    # alike in raising from their own code on every call is not
    broke = {"f(1)": "!TypeError", "f('a')": "?TypeError"}
    assert decide([t(0, 0, runs=broke)] * 2, rounds=4, out_of_time=False)[0] == "sample"


def test_a_stub_ranks_below_every_answer_that_is_not_one() -> None:
    stub = t(1, trusted=(1, 2), stub=True)
    tries = t(0, trusted=(0, 2))
    assert best([stub, tries]) == 1 and best([tries, stub]) == 0
    # a stub passing every test is still not accepted as the module
    assert decide([t(4, stub=True)], rounds=4, out_of_time=False)[0] == "sample"
    # below one that does not import? no: an answer that imports ranks first
    assert best([t(0, imports=False), stub]) == 1


def test_more_trusted_tests_replace_the_first() -> None:
    first = t(3, trusted=(1, 2))
    later = t(2, trusted=(2, 2))
    assert best([first, later]) == 1
    # the spec's own examples first, before the tester's own tests
    pleaser = t(4, total=5, trusted=(0, 2))
    assert best([pleaser, t(1, total=5, trusted=(2, 2))]) == 1
    # as many vouched for, losing tests the first passed: the first is the floor
    assert best([pleaser, t(1, total=5, trusted=(0, 2))]) == 0


def test_agreement_picks_the_majority_behaviour() -> None:
    odd = {"f(2)": "=5", "f(3)": "=7"}
    usual = {"f(2)": "=4", "f(3)": "=6"}
    near = {"f(2)": "=4", "f(3)": "=0"}
    # the first behaves unlike the others: the one that agrees with most replaces it
    assert best([t(0, runs=odd), t(0, runs=usual), t(0, runs=near), t(0, runs=usual)]) == 1
    # two alike candidates tie: the first of equals stays
    assert best([t(0, runs=usual), t(0, runs=odd)]) == 0


def test_a_later_candidate_that_raises_where_the_first_did_not_loses() -> None:
    first = {"f(2)": "=4", "f(-1)": "=0"}
    crashes = {"f(2)": "=4", "f(-1)": "!ValueError"}
    # it agrees with more of the others, but raises from its own code on f(-1)
    assert best([t(0, runs=first), t(0, runs=crashes), t(0, runs=crashes),
                 t(0, runs=crashes)]) == 0
    # an error outside its code (the arity a smoke run guessed) is not held against it
    guessed = {"f(2)": "=4", "f(-1)": "?TypeError"}
    assert best([t(0, runs=first), t(0, runs=guessed), t(0, runs=guessed)]) == 0  # tie


def test_the_first_of_equals_stays() -> None:
    first = t(2, trusted=(1, 2))
    assert decide([first, t(2, trusted=(1, 2))], rounds=2,
                  out_of_time=False) == ("keep_best", 0)
    assert best([t(2), t(2), t(2)]) == 0


def test_never_worse_than_the_first_on_any_test_that_ran() -> None:
    first = t(2, trusted=(1, 2), failed={"test_b", "test_c"})
    # passes more of the tester's tests, but fails test_a, which the first passed
    other = t(3, trusted=(1, 2), failed={"test_a"}, runs={"x": "=1"})
    assert best([first, other]) == 0
    # gaining a trusted test is worth a test of the tester's lost
    gains = t(3, trusted=(2, 2), failed={"test_a"})
    assert best([first, gains]) == 1
    # more tests passed and none lost: replaced
    more = t(3, trusted=(1, 2), failed={"test_c"})
    assert best([first, more]) == 1


def test_a_module_that_does_not_import_is_revised_with_its_error() -> None:
    assert decide([t(0), t(0, imports=False)], rounds=4, out_of_time=False)[0] == "revise"
    assert decide([t(4, imports=False)], rounds=4, out_of_time=False)[0] == "revise"
    assert best([t(0, imports=False), t(0)]) == 1


def test_failing_tests_ask_for_fresh_samples_until_the_rounds_run_out() -> None:
    steps = [decide([t(1)] * n, rounds=4, out_of_time=False)[0] for n in (1, 2, 3, 4)]
    assert steps == ["sample", "sample", "sample", "keep_best"]


def test_out_of_time_keeps_the_best_so_far() -> None:
    assert decide([t(3), t(1)], rounds=4, out_of_time=True) == ("keep_best", 0)
    assert decide([t(4)], rounds=4, out_of_time=True) == ("accept", 0)


def test_nothing_tried_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="at least one"):
        decide([], rounds=4, out_of_time=False)


def test_a_journaled_candidate_reads_back_as_tried() -> None:
    got = Tried.of({"score": [3, 5, 2, 4], "imports": False,
                    "stubs": ["f"], "runs": {"f(1)": "=1"}, "failed": ["test_a"]})
    assert got == Tried(imports=False, trusted=(2, 4), tests=(3, 5),
                        stub=True, runs={"f(1)": "=1"}, failed=frozenset({"test_a"}))
    assert Tried.of({"score": [1, 1]}).failed is None


def test_an_answer_its_dependents_can_import_ranks_above_one_they_cannot() -> None:
    """The names the plan says the module exports, counted once it is imported: below the
    spec's own examples, above agreement and the tester's tests; never a refusal."""
    lacks, whole = (1, 2), (2, 2)
    assert best([t(2, exports=lacks), t(2, exports=whole)]) == 1
    # above agreement and more of the tester's tests
    usual = {"f(2)": "=4"}
    assert best([t(2, exports=whole, runs={"f(2)": "=5"}), t(3, exports=lacks, runs=usual),
                 t(3, exports=lacks, runs=usual)]) == 0
    # below the spec's own examples, between later candidates
    assert best([t(2, exports=lacks), t(2, trusted=(1, 2), exports=whole),
                 t(2, trusted=(2, 2), exports=whole)]) == 2
    # but one lacking a name the floor defines never replaces it, whatever it passes: every
    # test importing that name fails (seen: a cut answer without format_headers won on the
    # spec's examples and scored 0 of 10 hidden tests, the floor 1)
    assert best([t(2, trusted=(1, 2), exports=whole), t(2, trusted=(2, 2), exports=lacks)]) == 0
    assert best([t(2, stub=True, exports=whole), t(2, exports=lacks)]) == 1  # a stub floor
    # it never outweighs a test the first passed, nor an input it answered
    assert best([t(2, exports=lacks, failed={"a", "b"}),
                 t(2, exports=whole, failed={"a", "c"})]) == 0
    assert best([t(2, exports=lacks, runs={"f(-1)": "=0"}),
                 t(2, exports=whole, runs={"f(-1)": "!ValueError"})]) == 0
    # a candidate not counted (journaled before the count) is compared as before
    assert best([t(2), t(2, exports=whole)]) == 0
    # and it refuses nothing: an answer defining none of them passing every test is accepted
    assert decide([t(4, exports=(0, 2))], rounds=4, out_of_time=False) == ("accept", 0)
    assert Tried.of({"score": [1, 2, 0, 0], "exports": [1, 2]}).exports == (1, 2)
    assert Tried.of({"score": [1, 2, 0, 0]}).exports is None


def test_an_answer_that_answers_no_input_ranks_as_a_stub() -> None:
    """An answer raising on every input, where the floor returns values, is as good as a
    stub: passing the spec's error examples that way is no evidence (seen on headers)."""
    floor = {"parse('a: b')": "={'a': 'b'}", "parse(' x')": "!HeaderError"}
    mute = {"parse('a: b')": "!HeaderError", "parse(' x')": "!HeaderError"}
    assert best([t(2, trusted=(1, 5), runs=floor), t(4, trusted=(2, 5), runs=mute)]) == 0
    # not when the floor answers nothing either: then the examples decide
    none = {"parse('a: b')": "?TypeError", "parse(' x')": "?TypeError"}
    assert best([t(2, trusted=(1, 5), runs=none), t(4, trusted=(2, 5), runs=mute)]) == 1
    # nor against a candidate that answers some input
    assert best([t(2, trusted=(1, 5), runs=floor), t(4, trusted=(2, 5), runs=mute),
                 t(2, trusted=(2, 5), runs=floor)]) == 2
    # with no runs at all (nothing to call), nothing changes
    assert best([t(2, trusted=(1, 5)), t(4, trusted=(2, 5))]) == 1
