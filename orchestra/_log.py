"""Library loggers: the user's structlog configuration if there is one, else stderr.

``structlog.get_logger`` with no configuration prints to **stdout**, which inside a
user's program mixes orchestra's lines into the program's own output (or its
pipes). These loggers resolve at each use: once the program (or the CLI) calls
``structlog.configure``, its processors and destination apply; until then lines
go to stderr with structlog's default formatting.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO, cast

import structlog
from structlog.typing import FilteringBoundLogger


class _Stderr:
    """``sys.stderr`` looked up at each write (tests and programs swap it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


class LibraryLogger:
    """A logger named ``name`` that never writes to stdout unless the user configures it."""

    __slots__ = ("_default", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._default: FilteringBoundLogger | None = None

    def _target(self) -> FilteringBoundLogger:
        if structlog.is_configured():
            return cast(FilteringBoundLogger, structlog.get_logger(self._name))
        if self._default is None:
            stderr = structlog.PrintLogger(cast(TextIO, _Stderr()))
            self._default = cast(FilteringBoundLogger, structlog.wrap_logger(stderr))
        return self._default

    def bind(self, **kw: Any) -> FilteringBoundLogger:
        return self._target().bind(**kw)

    def debug(self, event: str, **kw: Any) -> None:
        self._target().debug(event, **kw)

    def info(self, event: str, **kw: Any) -> None:
        self._target().info(event, **kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._target().warning(event, **kw)

    def error(self, event: str, **kw: Any) -> None:
        self._target().error(event, **kw)

    def exception(self, event: str, **kw: Any) -> None:
        self._target().exception(event, **kw)


def stderr() -> TextIO:
    """A stream that writes to whatever ``sys.stderr`` is at the time of each write."""
    return cast(TextIO, _Stderr())


def get_logger(name: str) -> LibraryLogger:
    return LibraryLogger(name)


class _OneLine(logging.Formatter):
    """A library's log record (asyncpg, uvicorn...) as one line: its exception's type and
    message, never its traceback (a command's output shows no tracebacks)."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"[{record.levelname.lower():<8}] {record.getMessage()} logger={record.name}"
        error = record.exc_info[1] if record.exc_info else None
        return text if error is None else f"{text} error=\"{type(error).__name__}: {error}\""


def library_logs_one_line(level: int) -> None:
    """Route the standard-library loggers of the libraries underneath (at ``level`` and
    up) to stderr, one line each, instead of Python's last-resort handler, which prints
    whole tracebacks (asyncpg's pool does, for one while PostgreSQL restarts)."""
    handler = logging.StreamHandler(stderr())
    handler.setFormatter(_OneLine())
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)
