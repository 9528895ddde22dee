"""A PgBouncer in transaction mode in front of the tests' PostgreSQL server.

The ``pgbouncer`` Debian package (installed by ``.ci/run``); outside CI a machine
without it skips the tests that need it, in CI (``ORCHESTRA_CI=1``) that is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from benchmarks.postgres.local import LocalPostgres

CONFIG = """\
[databases]
* = host=127.0.0.1 port={pg_port} user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = any
pool_mode = transaction
; one server connection for every client: consecutive transactions of a client land on
; a connection other clients prepared statements on, as under real load
default_pool_size = 2
max_client_conn = 50
ignore_startup_parameters = extra_float_digits
logfile =
pidfile =
"""


class Bouncer:
    """``pgbouncer`` listening on 127.0.0.1:``port``; ``close`` stops it."""

    def __init__(self, server: LocalPostgres, root: Path) -> None:
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        if not os.path.exists(binary):
            raise FileNotFoundError("pgbouncer is not installed (apt-get install pgbouncer)")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port: int = sock.getsockname()[1]
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)  # PgBouncer will not run as root: it reads this as nobody
        ini = root / "pgbouncer.ini"
        ini.write_text(CONFIG.format(pg_port=server.port, port=self.port))
        ini.chmod(0o644)
        self.log = root / "pgbouncer.log"
        as_root = ("-u", "nobody") if os.geteuid() == 0 else ()
        with self.log.open("w") as log:
            self._proc = subprocess.Popen([binary, *as_root, str(ini)], stdout=log,
                                          stderr=subprocess.STDOUT)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"pgbouncer exited: {self.log.read_text()}")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"pgbouncer did not listen in {timeout} s: {self.log.read_text()}")

    def dsn(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def close(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
