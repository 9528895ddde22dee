"""Which of the coder's candidates is the module, and what it does next: pure functions
of the candidates as :class:`Tried` sums them up (the coder's check does the effects).

Selection (:func:`best`): the first candidate, the model asked once, is the floor. A later
one replaces the best so far only on evidence from running code: it imports where the
other does not, is no stub where the other is one (nor answers no input where the floor
answers some), lacks no planned export the floor defines, and passes more of the spec's
own examples, or, where those tie and it neither crashes on an input the floor answers nor
fails a test the floor passed, defines more of its planned exports, agrees with more of
the other candidates' outputs (MBR-exec), or passes more tests. A choice that lost a test
the floor passed without passing more of what the spec vouches for gives way to the
floor. Zero tests is never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from agents.agreement import agreement, alike, crashes

__all__ = ["Next", "Tried", "best", "decide", "passes"]

Next = Literal["accept", "revise", "sample", "keep_best"]


@dataclass(frozen=True, slots=True)
class Tried:
    """One candidate, as its checks, its test run and its calls found it."""

    imports: bool
    """It imports as its users import it (a module that does not is no usable answer)."""
    trusted: tuple[int, int] = (0, 0)
    """The spec's own examples (tests the pipeline wrote from its words): passed, run."""
    tests: tuple[int, int] = (0, 0)
    """Every test of the module: passed, run."""
    stub: bool = False
    """A public function of it is a stub (:func:`agents.stubs.stubs`)."""
    runs: Mapping[str, str] = field(default_factory=dict)
    """What it did on each input (:mod:`agents.agreement`)."""
    failed: frozenset[str] | None = None
    """The tests it failed (None: the report does not name them all)."""
    exports: tuple[int, int] | None = None
    """Of the names the plan says it exports, how many it defines (None: not counted)."""

    @property
    def every_test(self) -> bool:
        """It passes every test of the module (and there are some)."""
        return self.tests[1] > 0 and self.tests[0] == self.tests[1]

    @classmethod
    def of(cls, data: Mapping[str, object]) -> Tried:
        """From a candidate as the coder journals it (``score``: [passed, run, trusted
        passed, trusted run]; ``stubs``, ``runs``, ``failed``, ``exports``)."""
        raw = data.get("score")
        s = [int(x) for x in raw] if isinstance(raw, list) else []
        s += [0] * (4 - len(s))
        runs = data.get("runs")
        failed = data.get("failed")
        exports = data.get("exports")
        return cls(imports=bool(data.get("imports", True)), trusted=(s[2], s[3]),
                   tests=(s[0], s[1]),
                   stub=bool(data.get("stubs")),
                   runs={str(k): str(v) for k, v in runs.items()} if isinstance(runs, dict)
                   else {},
                   failed=frozenset(str(f) for f in failed) if isinstance(failed, list) else None,
                   exports=(int(exports[0]), int(exports[1])) if isinstance(exports, list)
                   and len(exports) == 2 else None)


def _loses(t: Tried, floor: Tried) -> bool:
    """``t`` fails a test ``floor`` passed (by name where both name every failure, else count)."""
    if not floor.imports or floor.tests[1] == 0:
        return False
    if not t.imports:
        return True
    if t.failed is not None and floor.failed is not None and t.tests[1] == floor.tests[1]:
        return bool(t.failed - floor.failed)
    return t.tests[0] < floor.tests[0]


def _answers(t: Tried) -> bool:
    """It returns a value on some input it was run on."""
    return any(o.startswith("=") for o in t.runs.values())


def _stub(t: Tried, floor: Tried) -> bool:
    """A stub, or as good as one: it answers no input with a value where the floor answers
    some (seen: an answer raising on every input passed the spec's error examples)."""
    return t.stub or (_answers(floor) and not _answers(t))


def _replaces(new: Tried, old: Tried, floor: Tried, agree: tuple[int, int]) -> bool:
    """``new`` takes the place of ``old`` (the best so far); ``agree``: their agreement."""
    if new.imports != old.imports:
        return new.imports
    if _stub(new, floor) != _stub(old, floor):
        return _stub(old, floor)
    if new.exports is not None and floor.exports is not None and (
            new.exports[0] < floor.exports[0]):
        return False  # it lacks a planned name the floor defines: every import of it fails
    if new.trusted[0] != old.trusted[0]:
        return new.trusted[0] > old.trusted[0]
    if crashes(new.runs, floor.runs) or _loses(new, floor):
        return False
    if new.exports is not None and old.exports is not None and new.exports[0] != old.exports[0]:
        return new.exports[0] > old.exports[0]
    if agree[0] != agree[1]:
        return agree[0] > agree[1]
    return new.tests[0] > old.tests[0]


def best(tried: Sequence[Tried], extra: Sequence[Tried] = ()) -> int:
    """The module's index among ``tried`` (the first is the floor), then ``extra`` (a composite)."""
    pool = [*tried, *extra]
    if not pool:
        raise ValueError("best() needs at least one candidate")
    first = next((i for i, t in enumerate(pool) if t.imports), 0)
    floor = pool[first]
    agree = agreement([t.runs for t in pool])
    chosen = first
    for i, t in enumerate(pool):
        if i != first and _replaces(t, pool[chosen], floor, (agree[i], agree[chosen])):
            chosen = i
    pick = pool[chosen]
    if _loses(pick, floor) and pick.trusted[0] <= floor.trusted[0] and not floor.stub:
        return first  # never worse than the model asked once, on any test that ran
    return chosen


def passes(t: Tried, *, revised: bool = True) -> bool:
    """It imports, is no stub, and passes every test (zero is no pass), or, after a second
    answer, every test the spec vouches for (the others are the tester's guesses)."""
    if not t.imports or t.stub:
        return False
    vouched = t.trusted[1] > 0 and t.trusted[0] == t.trusted[1]
    return t.every_test or (vouched and revised)


def decide(tried: Sequence[Tried], *, rounds: int, out_of_time: bool) -> tuple[Next, int]:
    """What to do after the last of ``tried`` (``rounds`` of them at most), and the best
    answer's index."""
    if not tried:
        raise ValueError("decide() needs at least one tried answer")
    last = tried[-1]
    chosen = best(tried)
    if passes(last, revised=len(tried) > 1):
        return "accept", chosen
    if last.tests[1] == 0 and not last.stub and any(
            not t.stub and alike(t.runs, last.runs) for t in tried[:-1]):
        return "accept", chosen  # no test: two candidates that behave alike
    if out_of_time or len(tried) >= rounds:
        return "keep_best", chosen
    if not last.imports:
        return "revise", chosen  # a real error back to its author
    return "sample", chosen
