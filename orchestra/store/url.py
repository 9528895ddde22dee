"""One string selects the store: a file path (or ``sqlite:PATH``) is SQLite, a
``postgresql://`` (or ``postgres://``) URL is PostgreSQL.

This is what ``--db`` and ``ORCHESTRA_DB`` take. ``label`` names a store for
messages and logs; for PostgreSQL it leaves the password out.
"""

from __future__ import annotations

import os
from typing import Any

from orchestra._errors import UserError
from orchestra._install import install_hint
from orchestra.store.postgres.dsn import is_postgres, redact
from orchestra.store.protocol import Blackboard
from orchestra.store.sqlite.store import SQLiteBlackboard

_SQLITE = ("sqlite:///", "sqlite://", "sqlite:")


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


async def open_store(url: str | os.PathLike[str], **options: Any) -> Blackboard:
    """Open the store ``url`` names (creating or migrating it), picking the backend by scheme.

    ``options`` go to ``SQLiteBlackboard.open`` or ``PostgresBlackboard.open``.
    """
    path = sqlite_path(url)
    if path is not None:
        return await SQLiteBlackboard.open(path, **options)
    try:
        from orchestra.store.postgres import PostgresBlackboard
    except ImportError as exc:  # asyncpg is the extra's only dependency
        raise UserError(f"a PostgreSQL store needs the postgres extra ({exc}): "
                        f"{install_hint('postgres')}") from None
    return await PostgresBlackboard.open(os.fspath(url), **options)
