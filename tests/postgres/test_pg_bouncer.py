"""Through PgBouncer in transaction mode (``?pooler=transaction``): a run is created, an
``orchestra worker`` process drives it to the end, and a follower sees its events as
they commit, both by LISTEN on a direct ``listen_dsn`` and by polling without one.

Each transaction may run on another server connection there: named prepared statements
(asyncpg's cache) and LISTEN on a pooled connection break, which this test would catch.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from pg_bouncer import Bouncer

from benchmarks.fanout import build
from benchmarks.postgres.local import LocalPostgres
from benchmarks.workers import spawn
from orchestra import Coordinator
from orchestra._errors import UserError
from orchestra._types import Event
from orchestra.store.postgres import PostgresBlackboard
from orchestra.store.postgres.dsn import Options, options, redact, scrub

TASKS = 4


@pytest.fixture
def bouncer(server: LocalPostgres, tmp_path: Path) -> Iterator[Bouncer]:
    try:
        proxy = Bouncer(server, tmp_path / "pgbouncer")
    except FileNotFoundError as exc:
        if os.environ.get("ORCHESTRA_CI"):
            raise  # CI installs pgbouncer (.ci/run): never skip there
        pytest.skip(str(exc))
    yield proxy
    proxy.close()


async def _follow(store: PostgresBlackboard, run_id: str) -> list[Event]:
    seen: list[Event] = []
    async for event in store.follow(run_id):
        seen.append(event)
        if event.kind in ("run.completed", "run.failed"):
            break
    return seen


@pytest.mark.parametrize("listen", [True, False], ids=["listen-direct", "poll"])
async def test_a_run_and_a_worker_through_pgbouncer_in_transaction_mode(
        bouncer: Bouncer, dsn: str, listen: bool) -> None:
    pooled = bouncer.dsn(dsn.rsplit("/", 1)[1]) + "?pooler=transaction"
    url = pooled + ("&listen_dsn=" + quote(dsn, safe="") if listen else "")
    async with await PostgresBlackboard.open(url) as store:
        run_input = {"tasks": TASKS}
        run = await Coordinator(store, build(run_input)).start(run_input)
        following = asyncio.ensure_future(_follow(store, run.id))
        await asyncio.sleep(0)  # the follower starts (and LISTENs, on the direct URL only)
        [worker] = spawn(pooled, 1, None)
        code = await asyncio.to_thread(worker.wait, 60)
        assert code == 0, bouncer.log.read_text()[-2000:]
        seen = await asyncio.wait_for(following, 30)
        assert (await store.get_run(run.id)).status == "completed"
        assert seen[-1].kind == "run.completed"
        assert store.stats().listening is listen  # never LISTEN through the pooler
        assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
        assert [e.seq for e in seen] == [e.seq for e in await store.events(run.id)]
        tasks = await store.list_tasks(run.id)
        assert len(tasks) == TASKS and {t.status for t in tasks} == {"completed"}


def test_the_options_leave_the_url_asyncpg_gets_and_no_password_in_its_name() -> None:
    direct = "postgresql://u:direct-pw@db:5432/app?sslmode=disable"
    url = ("postgresql://u:pooled-pw@bouncer:6432/app?sslmode=disable&pooler=transaction"
           "&listen_dsn=" + quote(direct, safe=""))
    opts = options(url)
    assert opts == Options("postgresql://u:pooled-pw@bouncer:6432/app?sslmode=disable", 0,
                           direct)
    assert options(direct) == Options(direct, 256, direct)  # no pooler: LISTEN where it is
    assert options(direct + "&pooler=transaction").listen_dsn is None  # poll
    for text in (redact(url), scrub(f"failed: {url} direct-pw", url)):
        assert "pooled-pw" not in text and "direct-pw" not in text


async def test_a_bad_pooler_option_is_named() -> None:
    with pytest.raises(UserError, match=r"pooler='sesion'.*pooler=transaction"):
        await PostgresBlackboard.open("postgresql://u@127.0.0.1:1/db?pooler=sesion")
    with pytest.raises(UserError, match=r"listen_dsn .*not a postgresql:// URL") as err:
        await PostgresBlackboard.open("postgresql://u@127.0.0.1:1/db?listen_dsn=db:s3cr3t")
    assert "s3cr3t" not in str(err.value)
