"""Worker identities and whether their process is still alive.

An owner id is ``host:pid:nonce``. On resume, tasks leased by a dead process on
this host go back to the queue at once instead of waiting for the lease to
expire; a live owner's tasks are never taken.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable


def new_owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs. A zombie (killed, not yet reaped: its parent,
    a shell or a supervisor, has not waited for it) holds its pid but serves nothing;
    ``os.kill`` alone took it for alive, and ``resume`` refused its run as served."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False  # no /proc here (macOS): os.kill's answer stands
    return stat[stat.rindex(b")") + 2:][:1] == b"Z"


def dead_local_owners(owners: Iterable[str | None], *, me: str) -> list[str]:
    """Owners on this host whose process is gone (never ``me``)."""
    host = socket.gethostname()
    dead = []
    for owner in owners:
        if not owner or owner == me:
            continue
        parts = owner.split(":")
        if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid != os.getpid() and not _pid_alive(pid):
            dead.append(owner)
    return dead
