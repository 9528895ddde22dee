"""The PostgreSQL blackboard (extra ``.[postgres]``): the store protocols on a database
that workers on several hosts share."""

from orchestra._store.postgres.store import PostgresBlackboard

__all__ = ["PostgresBlackboard"]
