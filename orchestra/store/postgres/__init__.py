"""The PostgreSQL blackboard (extra ``.[postgres]``): the store protocols on a database
that workers on several hosts share.

``PostgresBlackboard`` is imported on first use, so that naming a store by URL
(``dsn``) works on the core install, without the driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestra.store.postgres.store import PostgresBlackboard

__all__ = ["PostgresBlackboard"]


def __getattr__(name: str) -> Any:
    if name == "PostgresBlackboard":
        from orchestra.store.postgres.store import PostgresBlackboard

        return PostgresBlackboard
    raise AttributeError(name)
