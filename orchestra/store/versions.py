"""What both backends share about runs' versions: the event of a move, and its errors.

The store knows a version only as an opaque string (``runs.version``); what it
fingerprints is the coordinator's business (``orchestra.coordinator.versions``).
"""

from __future__ import annotations

from collections.abc import Collection

from orchestra._errors import UserError

UPGRADED_EVENT = "run.upgraded"
"""A run moved to another version: ``{"from": old, "to": new, "manifest": ...}``."""


def served(versions: Collection[str] | None) -> list[str] | None:
    """The ``runs.version`` values a claimer serving ``versions`` may take (sorted): those,
    and ``''`` (a run that recorded none: any process may take it); None: no filter."""
    return None if versions is None else sorted({*versions, ""})


def covers(known: frozenset[str] | None, versions: Collection[str] | None) -> bool:
    """Whether a run known to be on one of ``known`` (None: not known) is one a claimer
    serving ``versions`` may take."""
    return versions is None or (known is not None and known <= {*versions, ""})


def version_changed(run_id: str, expected: str, found: str) -> UserError:
    """The error for a move of a run that another move (or process) changed first."""
    return UserError(f"run {run_id} is on version {found or '(none)'}, not {expected}: it "
                     "was moved meanwhile; look at it again (`orchestra show RUN`)")


def moved_while_served(run_id: str, left: float) -> UserError:
    """The error for a move of a run a live process still serves."""
    return UserError(f"run {run_id} is being served by a live process (for {left:.0f} s more "
                     "at least); a run moves to other code only while nobody runs it: stop "
                     "its worker (or wait for it to finish), then upgrade")
