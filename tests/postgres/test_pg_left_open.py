"""A program that ends without closing its PostgreSQL store exits too (asyncpg's pool
runs no thread; the SQLite twin is tests/store/test_left_open.py), with its writes kept."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from orchestra.store.postgres import PostgresBlackboard

REPO = Path(__file__).resolve().parents[2]


def _run_unclosed(dsn: str) -> subprocess.CompletedProcess[str]:
    """A script that opens the store, writes, and ends without closing it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")])}
    script = textwrap.dedent("""
        import asyncio, sys
        from orchestra.store.url import open_store

        async def main():
            store = await open_store(sys.argv[1])
            await store.create_run("p", {"n": 1}, run_id="kept")

        asyncio.run(main())
    """)
    child = subprocess.Popen([sys.executable, "-c", script, dsn], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail("the program did not exit: a store left open kept it alive")
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


@pytest.mark.slow  # a Python process
async def test_a_script_that_never_closes_its_store_exits_and_keeps_its_writes(
        dsn: str) -> None:
    done = _run_unclosed(dsn)
    assert done.returncode == 0, done.stderr
    store = await PostgresBlackboard.open(dsn)
    try:
        assert (await store.get_run("kept")).pipeline == "p"
    finally:
        await store.close()
