"""The run's working time, not the wall clock (a run resumed the next morning is not out
of time): every task the pipeline posts carries ``worked``, its working seconds then, and
a process's clock is the latest stamp it has seen plus the monotonic time since. What a
task in flight at a kill had worked since its stamp is lost (at most one task's time).
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["WorkClock"]


class WorkClock:
    """One process's view of the run's working time, injected into its roles and routes."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._offset: float | None = None

    def seen(self, worked: float) -> None:
        """A task stamped ``worked`` seconds: the clock is at least there now."""
        offset = worked - self._now()
        if self._offset is None or offset > self._offset:
            self._offset = offset

    def worked(self) -> float:
        """The run's working seconds so far (0 before any stamp was seen)."""
        if self._offset is None:
            self.seen(0.0)
        assert self._offset is not None
        return self._offset + self._now()

    def past(self, *ends: float | None) -> bool:
        """The run's working time has reached the earliest of ``ends`` (None: no end)."""
        return not self.fits(None, *ends)

    def fits(self, since: float | None, *ends: float | None) -> bool:
        """A stretch as long as the one since ``since`` (the module's last round) still
        ends before the earliest of ``ends``: a round that cannot is not begun (seen: a
        review and a corrected test file, 200 s past a module's end, thrown away)."""
        given = [t for t in ends if t is not None]  # no end: the clock is not even read
        return not given or (2 * (now := self.worked()) - (now if since is None else since)
                             < min(given))
