"""Suite-wide guards: no real model requests unless a test opts in; in the store suite,
no SQLite call by orchestra on the event loop's thread; in the runtime, CLI and server
suites, no blocking call by orchestra on the loop at all (blockbuster)."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from blocking_guard import no_blocking_on_the_loop
from ci_guard import pytest_runtest_logreport, pytest_sessionfinish  # noqa: F401  (CI skips)

import orchestra.models._guard as guard


@pytest.fixture(autouse=True)
def _no_real_models(request: pytest.FixtureRequest) -> Iterator[None]:
    guard.ALLOW_MODEL_REQUESTS = bool(request.node.get_closest_marker("llama"))
    yield
    guard.ALLOW_MODEL_REQUESTS = True


# -- no SQL on the event loop (the store suite) ------------------------------------------
_LOOP_GUARDED = ("store", "store_contract")
_TESTS = Path(__file__).resolve().parent


class SQLOnLoop(list[str]):
    """Where SQLite was called on a thread that runs an event loop (``module:line``)."""

    def check(self) -> None:
        """Called by a guarded call: record it if it is made on an event loop's thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # a store thread (or sync code): fine
        frame = sys._getframe(2)  # the code that called the guarded sqlite3 function
        self.append(f"{frame.f_globals.get('__name__')}:{frame.f_lineno} "
                    f"({frame.f_code.co_name})")

    def assert_none(self) -> None:
        if self:
            raise AssertionError("SQLite was called on the event loop's thread (it blocks the "
                                 f"loop; run it on the store's thread): {', '.join(self)}")


def _guarded_connection(seen: SQLOnLoop) -> type[sqlite3.Connection]:
    class LoopGuardedConnection(sqlite3.Connection):
        """Every blocking call of a connection reports itself to ``seen`` first."""

        def cursor(self, *args: Any, **kwargs: Any) -> Any:
            seen.check()
            return super().cursor(*args, **kwargs)

        def execute(self, *args: Any, **kwargs: Any) -> Any:
            seen.check()
            return super().execute(*args, **kwargs)

        def executemany(self, *args: Any, **kwargs: Any) -> Any:
            seen.check()
            return super().executemany(*args, **kwargs)

        def executescript(self, *args: Any, **kwargs: Any) -> Any:
            seen.check()
            return super().executescript(*args, **kwargs)

        def commit(self) -> None:
            seen.check()
            super().commit()

        def rollback(self) -> None:
            seen.check()
            super().rollback()

        def close(self) -> None:
            seen.check()
            super().close()

    return LoopGuardedConnection


@pytest.fixture
def sql_on_loop(monkeypatch: pytest.MonkeyPatch) -> SQLOnLoop:
    """Patch ``sqlite3.connect`` so that every connection opened during the test (and the
    open itself) records SQL run on an event loop's thread; connections that test code
    opens itself (to make or inspect a file) are exempt."""
    seen = SQLOnLoop()
    connect = sqlite3.connect
    factory = _guarded_connection(seen)

    def guarded_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opener = Path(sys._getframe(1).f_code.co_filename)
        if not opener.is_relative_to(_TESTS):  # a test's own connection may do anything
            seen.check()
            kwargs.setdefault("factory", factory)
        return connect(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", guarded_connect)
    return seen


@pytest.fixture(autouse=True)
def _no_sql_on_the_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """The store suite fails any test during which orchestra ran SQLite on the loop."""
    if request.node.path.parent.name not in _LOOP_GUARDED:
        yield
        return
    seen: SQLOnLoop = request.getfixturevalue("sql_on_loop")
    yield
    seen.assert_none()


# -- no blocking call on the event loop (the runtime, CLI and server suites) -------------
_no_blocking_on_the_loop = pytest.fixture(autouse=True)(no_blocking_on_the_loop)


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_reaches_children() -> Iterator[None]:
    """Children the tests start take Ctrl-C as a person's terminal gives it, however the
    suite was started: a shell's background job (``cmd &`` without job control) ignores
    SIGINT, the ignoring is inherited across exec, and every Ctrl-C test then saw its
    child run on. A handled signal is reset to the default at exec, so handle it here."""
    before = signal.getsignal(signal.SIGINT)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

