"""Which asyncpg errors a store call survives: ``RERUN`` aborts run the transaction again
from the start; ``LOST`` (the connection dropped, the server restarted) reconnect first.

``InternalClientError`` and ``InterfaceError`` are in ``LOST``: after a server restart
asyncpg can hand out a pooled connection whose protocol is still stuck in the operation
the shutdown cut off ("cannot switch to state 12; another operation (2) is in progress"),
or raise from a transaction's exit on a connection closed under it ("the underlying
connection is closed"); the store drops that connection and retries on a new one."""

from __future__ import annotations

import asyncpg

RERUN = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError,
         asyncpg.UniqueViolationError)
LOST = (asyncpg.PostgresConnectionError, asyncpg.ConnectionDoesNotExistError,
        asyncpg.CannotConnectNowError, asyncpg.AdminShutdownError, asyncpg.InternalClientError,
        asyncpg.InterfaceError, ConnectionError, OSError)
