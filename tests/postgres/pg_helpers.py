"""Helpers of the PostgreSQL tests."""

from __future__ import annotations


def with_password(dsn: str, password: str = "s3cr3t-pw") -> str:
    """The DSN with a password in it (the test server trusts every login: it is ignored)."""
    return dsn.replace("postgres@", f"postgres:{password}@", 1)
