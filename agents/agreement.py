"""Execution agreement: which candidate behaves the way most others do (MBR-exec, CodeT).

Where no test the spec vouches for decides, each candidate is run on the same inputs
(:mod:`agents.probe`) and each call recorded as ``=<repr>`` (a value), ``!<Error>``
(raised from the module's own code), ``?<Error>`` (raised outside it) or ``~`` (out of
time); the candidate agreeing with most others is most likely right (arXiv 2204.11454).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["Runs", "agreement", "alike", "crashes", "own_raises"]

Runs = Mapping[str, str]
"""One candidate's outcomes: input (a call's source) -> outcome."""


def _counts(outcome: str) -> bool:
    """An outcome that says something of the candidate: a value, or its own raise (an
    error outside its code, or no answer in time, agrees with nothing)."""
    return outcome.startswith(("=", "!"))


def agreement(runs: Sequence[Runs]) -> list[int]:
    """For each candidate: the (other candidate, input) pairs with the same outcome."""
    return [sum(1 for j, other in enumerate(runs) if j != i
                for x, o in mine.items() if _counts(o) and other.get(x) == o)
            for i, mine in enumerate(runs)]


def own_raises(runs: Runs) -> list[str]:
    """The inputs on which the candidate's own code raised or did not finish."""
    return [x for x, o in runs.items() if o.startswith(("!", "~"))]


def crashes(runs: Runs, floor: Runs) -> list[str]:
    """The inputs ``floor`` answers with a value on which this one raises or hangs."""
    return [x for x in own_raises(runs) if floor.get(x, "").startswith("=")]


def alike(a: Runs, b: Runs) -> bool:
    """Two candidates behave the same on every input and return a value on some: two
    samples that agree is evidence (a smoke run's guessed inputs may rightly raise)."""
    return bool(a) and a == b and any(o.startswith("=") for o in a.values())
