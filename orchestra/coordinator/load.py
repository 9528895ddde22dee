"""How busy this process is: whether a worker has room to take on more runs.

Two signals, either one meaning "busy": the process's CPU (every thread) per wall
second since the last reading (an asyncio process runs its Python on one core, so at
:data:`BUSY_CPU` it has no more to give), and how late its event loop runs a timer
(:class:`LoopLag`: its own callbacks hold the loop, or the host's other processes
starve it). A worker that is busy takes one new run per look and leaves the rest to
workers with room (``WorkFinder``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

BUSY_CPU = 0.8
"""CPU seconds per wall second from which a process counts as busy."""

LATE = 0.02
"""Mean lateness (s) of the event loop's ticks from which a process counts as busy."""


class LoopLag:
    """How late the event loop runs a callback due every ``tick`` seconds: the mean
    lateness since the last reading. A process whose loop runs late has no room for
    more work, whether its own drives or other processes on the host hold the CPU."""

    def __init__(self, tick: float = 0.05) -> None:
        self._tick = tick
        self._late, self._beats = 0.0, 0
        self._due = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def read(self) -> float:
        """The mean lateness since the last reading (starts the ticks on first use); a
        tick overdue now counts too, so a loop too busy to run any still reads late."""
        now = asyncio.get_running_loop().time()
        if self._handle is None:
            self._schedule(now)
        late, beats = self._late, self._beats
        if now > self._due:
            late, beats = late + now - self._due, beats + 1
        self._late, self._beats = 0.0, 0
        return late / beats if beats else 0.0

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()

    def _schedule(self, now: float) -> None:
        self._due = now + self._tick
        self._handle = asyncio.get_running_loop().call_at(self._due, self._beat)

    def _beat(self) -> None:
        now = asyncio.get_running_loop().time()
        self._late += max(0.0, now - self._due)
        self._beats += 1
        self._schedule(now)


class Load:
    """This process's load since the last reading: busy when its CPU share or its
    loop's lateness is past its mark."""

    def __init__(self, *, cpu: Callable[[], float] = time.process_time,
                 clock: Callable[[], float] = time.monotonic,
                 lag: LoopLag | None = None) -> None:
        self._cpu, self._clock = cpu, clock
        self._last = (cpu(), clock())
        self.lag = lag or LoopLag()

    def cpu_share(self) -> float:
        """CPU seconds per wall second since the last reading."""
        cpu, now = self._cpu(), self._clock()
        (cpu0, then), self._last = self._last, (cpu, now)
        return (cpu - cpu0) / (now - then) if now > then else 0.0

    def busy(self) -> bool:
        share, late = self.cpu_share(), self.lag.read()  # both read: each window restarts
        return share >= BUSY_CPU or late >= LATE

    def close(self) -> None:
        self.lag.close()
