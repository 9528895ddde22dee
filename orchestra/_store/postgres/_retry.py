"""Which asyncpg errors a store call survives: ``RERUN`` aborts run the transaction again
from the start; ``LOST`` (the connection dropped, the server restarted) reconnect first."""

from __future__ import annotations

import asyncpg

RERUN = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError,
         asyncpg.UniqueViolationError)
LOST = (asyncpg.PostgresConnectionError, asyncpg.ConnectionDoesNotExistError,
        asyncpg.CannotConnectNowError, asyncpg.AdminShutdownError, ConnectionError, OSError)
