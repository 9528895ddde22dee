"""A program that ends without closing its store exits (aiosqlite's connection threads
are not daemons: before, the interpreter waited for them for ever), keeps what it
committed, and says once on stderr which store was left open."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import aiosqlite
import pytest

from orchestra.store import SQLiteBlackboard
from orchestra.store.sqlite.left_open import LeftOpen, warning

REPO = Path(__file__).resolve().parents[2]

def run_script(body: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``body`` in a new interpreter; it must exit by itself (60 s is a hang)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(body), *args], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail("the program did not exit: a store left open kept it alive")
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


UNCLOSED = """
    import asyncio, sys
    from orchestra import SQLiteBlackboard
    from orchestra.store import NewNote

    async def main():
        for path in sys.argv[1:]:
            store = await SQLiteBlackboard.open(path)
            await store.create_run("p", {"n": 1}, run_id="kept")
            await store.post_note("kept", "me", NewNote("written before the end"))

    asyncio.run(main())
"""


@pytest.mark.slow  # a Python process
async def test_a_script_that_never_closes_its_store_exits_and_keeps_its_writes(
        tmp_path: Path) -> None:
    path = tmp_path / "left.db"
    done = run_script(UNCLOSED, str(path))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("orchestra: a store was left open") == 1, done.stderr
    assert str(path) in done.stderr and "await store.close()" in done.stderr
    async with await SQLiteBlackboard.open(path) as store:
        assert (await store.get_run("kept")).pipeline == "p"
        assert [n.body for n in await store.search_notes("kept", text="written")] == [
            "written before the end"]


@pytest.mark.slow
async def test_two_stores_left_open_are_named_in_one_line(tmp_path: Path) -> None:
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    done = run_script(UNCLOSED, str(first), str(second))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("orchestra:") == 1, done.stderr
    assert "2 stores were left open" in done.stderr
    assert str(first) in done.stderr and str(second) in done.stderr


@pytest.mark.slow
def test_a_closed_store_says_nothing(tmp_path: Path) -> None:
    done = run_script("""
        import asyncio, sys
        from orchestra import SQLiteBlackboard

        async def main():
            async with await SQLiteBlackboard.open(sys.argv[1]) as store:
                await store.create_run("p", {"n": 1})

        asyncio.run(main())
    """, str(tmp_path / "closed.db"))
    assert done.returncode == 0, done.stderr
    assert "orchestra:" not in done.stderr


async def test_the_guard_stops_only_the_connections_still_open(tmp_path: Path) -> None:
    said: list[str] = []
    guard = LeftOpen(write=said.append)
    left = await aiosqlite.connect(tmp_path / "left.db")
    closed = await aiosqlite.connect(tmp_path / "closed.db")
    guard.opened("left.db", [left])
    guard.opened("closed.db", [closed])
    await closed.close()
    guard.closed([closed])
    # off the loop, as the watcher does (aiosqlite then settles no future on a loop)
    assert await asyncio.to_thread(guard.stop_all) == ["left.db"]
    with pytest.raises(ValueError):  # stopped: "Connection closed", or "no active connection"
        await left.execute("SELECT 1")
    assert guard.stop_all() == []
    assert said == []  # only the watcher writes, once the main thread has ended
    assert warning(["a.db"]).startswith("orchestra: a store was left open (a.db)")
