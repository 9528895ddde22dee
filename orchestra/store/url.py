"""One string selects the store: a file path (or ``sqlite:PATH``) is SQLite, a
``postgresql://`` (or ``postgres://``) URL is PostgreSQL.

This is what ``--db`` and ``ORCHESTRA_DB`` take. ``label`` names a store for
messages and logs; for PostgreSQL it leaves the password out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TypedDict, Unpack, cast

from orchestra._errors import UserError
from orchestra._install import install_hint
from orchestra._types import Durability
from orchestra.store.postgres.dsn import is_postgres, redact
from orchestra.store.protocol import Blackboard, StatementTrace
from orchestra.store.sqlite.store import SQLiteBlackboard

_SQLITE = ("sqlite:///", "sqlite://", "sqlite:")


class SQLiteOptions(TypedDict, total=False):
    """What ``SQLiteBlackboard.open`` takes (see it for each option's meaning)."""

    durability: Durability
    max_payload_bytes: int
    verify_only: bool
    busy_timeout: float
    max_batch: int
    read_only: bool
    trace: StatementTrace


class PostgresOptions(TypedDict, total=False):
    """What ``PostgresBlackboard.open`` takes (see it for each option's meaning)."""

    max_payload_bytes: int
    verify_only: bool
    pool_size: int
    reconnect_seconds: float
    trace: StatementTrace


class StoreOptions(SQLiteOptions, PostgresOptions, total=False):
    """Either backend's options; :func:`open_store` refuses one the URL's backend lacks."""


def check_options(backend: str, options: Mapping[str, object], known: frozenset[str]) -> None:
    """Raise ``UserError`` naming the first option ``backend`` does not take, and its own."""
    unknown = sorted(set(options) - known)
    if unknown:
        raise UserError(f"unknown option {unknown[0]!r} for a {backend} store; its options "
                        f"are {', '.join(sorted(known))}")


def sqlite_path(url: str | os.PathLike[str]) -> str | None:
    """The file path a SQLite store URL or path names; None for a PostgreSQL URL."""
    text = os.fspath(url)
    if is_postgres(text):
        return None
    for prefix in _SQLITE:
        if text.lower().startswith(prefix):
            return text[len(prefix):] or ""
    scheme, sep, _ = text.partition("://")
    if sep and scheme.isidentifier():
        raise UserError(f"unknown store scheme {scheme!r} in --db; use a file path, "
                        "sqlite:PATH or postgresql://user:password@host:port/database")
    return text


def label(url: str | os.PathLike[str]) -> str:
    """How messages name the store: the path, or the URL without its password."""
    text = os.fspath(url)
    return redact(text) if is_postgres(text) else text


def exists(url: str | os.PathLike[str]) -> bool:
    """Whether a store may already be there: a SQLite file exists; a PostgreSQL URL
    always may (connecting is what tells)."""
    path = sqlite_path(url)
    return path is None or os.path.exists(path)


async def open_store(url: str | os.PathLike[str], **options: Unpack[StoreOptions]
                     ) -> Blackboard:
    """Open the store ``url`` names (creating or migrating it), picking the backend by scheme.

    ``options`` go to ``SQLiteBlackboard.open`` (:class:`SQLiteOptions`) or
    ``PostgresBlackboard.open`` (:class:`PostgresOptions`); one the backend does not take
    (a typo, or SQLite's ``durability`` for PostgreSQL) is a ``UserError`` naming it.
    """
    path = sqlite_path(url)
    if path is not None:
        check_options("SQLite", options, SQLiteOptions.__optional_keys__)
        return await SQLiteBlackboard.open(path, **cast(SQLiteOptions, options))
    check_options("PostgreSQL", options, PostgresOptions.__optional_keys__)
    try:
        from orchestra.store.postgres import PostgresBlackboard
    except ImportError as exc:  # asyncpg is the extra's only dependency
        raise UserError(f"a PostgreSQL store needs the postgres extra ({exc}): "
                        f"{install_hint('postgres')}") from None
    return await PostgresBlackboard.open(os.fspath(url), **cast(PostgresOptions, options))
