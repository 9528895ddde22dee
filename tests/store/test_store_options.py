"""Store options are typed per backend: one the URL's backend does not take (a typo, or
SQLite's ``durability`` for PostgreSQL) is an error naming it and the known ones."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from orchestra.errors import UserError
from orchestra.store.sqlite.store import SQLiteBlackboard
from orchestra.store.url import PostgresOptions, SQLiteOptions, open_store


async def test_an_unknown_sqlite_option_is_named_with_the_known_ones(tmp_path: Path) -> None:
    options: Any = {"durabilty": "full"}  # a typo
    with pytest.raises(UserError) as info:
        await open_store(tmp_path / "o.db", **options)
    assert "unknown option 'durabilty' for a SQLite store" in str(info.value)
    assert "busy_timeout, durability, max_batch" in str(info.value)
    assert not (tmp_path / "o.db").exists()  # refused before anything is created


async def test_a_sqlite_option_is_refused_for_postgresql() -> None:
    # refused before connecting: no server is needed to tell
    with pytest.raises(UserError) as info:
        await open_store("postgresql://u@127.0.0.1:1/db", durability="full")
    assert "unknown option 'durability' for a PostgreSQL store" in str(info.value)
    assert "max_payload_bytes, pool_size, reconnect_seconds, trace, verify_only" in str(info.value)


async def test_known_options_reach_the_backend(tmp_path: Path) -> None:
    store = await open_store(tmp_path / "o.db", durability="full", max_batch=8)
    await store.close()


def _keywords(fn: Any) -> set[str]:
    return {n for n, p in inspect.signature(fn).parameters.items() if p.kind is p.KEYWORD_ONLY}


def test_the_option_types_match_the_backends() -> None:
    from orchestra.store.postgres import PostgresBlackboard

    assert set(SQLiteOptions.__optional_keys__) == _keywords(SQLiteBlackboard.open)
    assert set(PostgresOptions.__optional_keys__) == _keywords(PostgresBlackboard.open)
