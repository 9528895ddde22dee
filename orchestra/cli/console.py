"""The console of a command that drives a run: once its reader is gone, it is gone.

``orchestra demo | head -1`` closes the pipe after one line. The run is not the console:
a write to a closed pipe must neither stop the run (a ``BrokenPipeError`` raised from a
``print`` between "run recorded" and "first task claimed" used to strand it) nor stall it.
This stream drops everything once the reader has left, and points the file descriptor
at /dev/null so the interpreter's own last flush does not complain either.
"""

from __future__ import annotations

import errno
import os
from typing import Any, TextIO


class DetachingStream:
    """``stream``, until a write or flush finds its reader gone; then a sink."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.detached = False
        """True once the reader left: nothing written since reached anyone."""

    def write(self, text: str) -> int:
        if not self.detached:
            self._guard(lambda: self._stream.write(text))
        return len(text)

    def flush(self) -> None:
        if not self.detached:
            self._guard(self._stream.flush)

    def _guard(self, op: Any) -> None:
        try:
            op()
        except BrokenPipeError:
            self._detach()
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.EINVAL):
                raise
            self._detach()

    def _detach(self) -> None:
        self.detached = True
        try:  # whatever is still buffered, and the interpreter's flush at exit: to nowhere
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # not a real file (a test's StringIO): dropping writes is enough

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
