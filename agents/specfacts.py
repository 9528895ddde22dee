"""What the pipeline reads from a spec, behind one call, :func:`read_spec`, made where the
plan is routed (no role reads the spec again): only what is unambiguous (the paths it
names, the signatures it writes, the examples it states as calls with their results,
doctest sessions or tables). None of it refuses an answer: it is advice to the models,
and the trusted tests that rank candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agents.checks import dotted, spec_section
from agents.inputs import Stated
from agents.specapi import spec_signatures
from agents.speccases import spec_cases

__all__ = ["SpecFacts", "read_spec"]


@dataclass(frozen=True)
class SpecFacts:
    """A spec, read for the plan's route."""

    text: str

    def signatures(self, path: str, others: Sequence[str]) -> list[str]:
        """The signatures the spec writes for the module at ``path``."""
        return spec_signatures(self.text, path, others)

    def uses(self, paths: Sequence[str]) -> dict[str, list[str]]:
        """For each of ``paths``, those of the others its part of the spec names (none in a
        spec that has no part per module)."""
        out: dict[str, list[str]] = {}
        for p in paths:
            section = spec_section(self.text, p)
            out[p] = [q for q in paths if q != p and section is not self.text and (
                q in section or dotted(q) in section)]
        return out

    def stated(self, path: str, api: Sequence[str]) -> Stated:
        """What the spec states about the module at ``path`` whose API is ``api``."""
        section = spec_section(self.text, path)
        return Stated(section=section, cases=spec_cases(section, api))


def read_spec(text: str) -> SpecFacts:
    """The facts of ``text``."""
    return SpecFacts(text)
