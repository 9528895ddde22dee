"""What the coder does next with the answers it has tried: a pure function of them.

Each tried answer is summed up as a :class:`Tried` (does it import, how many of the
spec's own examples, of the tests the spec vouches for and of all tests it passed, and
what the spec-derived checks advise). :func:`decide` says what comes next: accept the
last answer, ask for a revision of it (with its real errors), ask for a new sample, or
keep the best so far. Nothing here runs anything, so every rule is unit-tested without
pytest; the coder's check does the effects (write, import, test) and words the feedback.

The rules (``../shared/research/small-models.md``): the tests the pipeline can trust
decide; early stop once they pass; a real error (the module does not import) goes back
for a revision, a failing test asks for a new sample instead (a 1.5B model revising in
view of its answer and a failing test sent the same file back, byte for byte, in 7 of 8
revisions on the external specs, the eighth unparsable; feedback fixes NameError and
SyntaxError far more often than AssertionError); a check read from the spec can be wrong,
so it ranks and advises but never refuses, and when the model answers its complaint
with the same shape twice it yields; the best answer is never worse than the first
usable one (the first of equals wins).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Next", "Tried", "best", "decide", "passes", "rank", "yielded"]

Next = Literal["accept", "revise", "sample", "keep_best"]


@dataclass(frozen=True, slots=True)
class Tried:
    """One tried answer, as its checks and its test run found it."""

    imports: bool
    """It imports as its users import it (a module that does not is no usable answer)."""
    spec: tuple[int, int] = (0, 0)
    """The spec's own examples (tests the pipeline wrote from its words): passed, run."""
    trusted: tuple[int, int] = (0, 0)
    """Tests the spec vouches for (its examples among them): passed, run."""
    tests: tuple[int, int] = (0, 0)
    """Every test of the module: passed, run."""
    advice: str = ""
    """What the checks read from the spec (public names, signatures, imports of the
    modules it builds on) say is missing ('' when nothing)."""

    @property
    def every_test(self) -> bool:
        """It passes every test of the module (and there are some)."""
        return self.tests[1] > 0 and self.tests[0] == self.tests[1]

    @classmethod
    def of(cls, data: dict[str, object]) -> Tried:
        """From a candidate as the coder journals it (``score``: [passed, run, trusted
        passed, spec passed, trusted run, spec run])."""
        raw = data.get("score")
        s = [int(x) for x in raw] if isinstance(raw, list) else []
        s += [0] * (6 - len(s))
        return cls(imports=bool(data.get("imports", True)), spec=(s[3], s[5]),
                   trusted=(s[2], s[4]), tests=(s[0], s[1]), advice=str(data.get("advice") or ""))


def yielded(tried: Sequence[Tried]) -> set[str]:
    """The advice the model answered with the same shape twice running: the check that
    gave it yields (it may be the one that is wrong)."""
    return {a.advice for a, b in itertools.pairwise(tried) if a.advice and a.advice == b.advice}


def rank(t: Tried, ignored: set[str] | frozenset[str] = frozenset()) -> tuple[int, ...]:
    """Best first: imports, then the spec's own examples passed (no model can have them
    wrong), then the tests the spec vouches for, then all tests, then the advice heeded
    (a check read from the spec may be the wrong one: it only parts equals)."""
    heeded = not t.advice or t.advice in ignored
    return (int(t.imports), t.spec[0], t.trusted[0], t.tests[0], int(heeded))


def best(tried: Sequence[Tried], extra: Sequence[Tried] = ()) -> int:
    """The index of the best answer; the first of equals (a later answer that is no
    better never replaces an earlier one). ``extra``: candidates no model gave (a
    composite of the answers), ranked after them, never counted in :func:`yielded`."""
    ignored = yielded(tried)
    pool = [*tried, *extra]
    top = max(rank(t, ignored) for t in pool)
    return next(i for i, t in enumerate(pool) if rank(t, ignored) == top)


def passes(t: Tried, ignored: set[str] | frozenset[str] = frozenset(), *,
           revised: bool = True) -> bool:
    """Done with: it imports, heeds the advice (or the check yielded), and passes every
    test, or, once another answer was asked for, every test the spec vouches for (early
    stop: the others are the tester's own guesses, which only rank; one more answer in
    view of them costs one call and may pass a case the spec did not state)."""
    if not t.imports or (t.advice and t.advice not in ignored):
        return False
    vouched = t.trusted[1] > 0 and t.trusted[0] == t.trusted[1]
    return t.every_test or (vouched and revised)


def decide(tried: Sequence[Tried], *, rounds: int, out_of_time: bool) -> tuple[Next, int]:
    """What to do after the last of ``tried`` (in order), and the best answer's index.

    ``rounds``: answers one task may try; ``out_of_time``: the run's budget is spent."""
    if not tried:
        raise ValueError("decide() needs at least one tried answer")
    ignored = yielded(tried)
    last = len(tried) - 1
    chosen = best(tried)
    if passes(tried[last], ignored, revised=last > 0):
        # the best of those tried (an earlier answer may pass as much and more of the rest)
        return "accept", (chosen if passes(tried[chosen], ignored) else last)
    if out_of_time or len(tried) >= rounds:
        return "keep_best", chosen
    if not tried[last].imports or (tried[last].advice and tried[last].advice not in ignored):
        return "revise", chosen  # a real error (or a check's complaint) back to its author
    return "sample", chosen
