"""Whether a lease owner's process on this host is alive: a killed process its parent has
not reaped yet (a zombie) is dead, so ``resume`` takes its tasks back at once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestra.coordinator.owners import _pid_alive, dead_local_owners


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return stat[stat.rindex(b")") + 2:][:1].decode()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_killed_unreaped_process_is_dead_and_a_running_one_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host = socket.gethostname()
        owner = f"{host}:{child.pid}:abc123"
        assert _pid_alive(child.pid)
        assert dead_local_owners([owner], me="x") == []
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while _state(child.pid) != "Z":  # not waited for: it stays a zombie
            assert time.monotonic() < deadline, "the child did not die"
            time.sleep(0.01)
        os.kill(child.pid, 0)  # the pid is still taken...
        assert not _pid_alive(child.pid)  # ...by a process that serves nothing
        assert dead_local_owners([owner, None, "elsewhere:1:x"], me="x") == [owner]
    finally:
        child.kill()
        child.wait()
    assert not _pid_alive(child.pid)
