"""Helpers of the PostgreSQL tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


def with_password(dsn: str, password: str = "s3cr3t-pw") -> str:
    """The DSN with a password in it (the test server trusts every login: it is ignored)."""
    return dsn.replace("postgres@", f"postgres:{password}@", 1)


async def until(check: Callable[[], object], what: str, within: float = 30.0) -> None:
    """Until ``check()`` is true (polled on the loop); fail naming ``what`` after ``within``
    seconds. For conditions nothing signals (what another connection has done)."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)
