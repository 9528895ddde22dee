"""``LocalPostgres``: a throwaway PostgreSQL server for tests and benchmarks, no system install
(a helper of the checkout, not of the installed package).

It runs the PostgreSQL 16 binaries shipped in the ``pgserver`` wheel (the ``.[dev]``
extra) directly, instead of ``pgserver.get_server``: that one listens on a Unix
socket only (multi-host behaviour needs TCP), and when run as root it adds a system
user and opens up the permissions of every parent directory of its data. PostgreSQL
refuses to run as root, so as root this runs it as ``nobody`` in a private
directory owned by ``nobody`` (and nothing else is changed on the machine).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import warnings
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here; the message says why."""


def _binaries() -> Path:
    try:
        with warnings.catch_warnings():  # pgserver's import warns of an unset XDG_RUNTIME_DIR
            warnings.simplefilter("ignore")
            from pgserver._commands import POSTGRES_BIN_PATH
    except ImportError as exc:
        raise PostgresUnavailable(
            f"the pgserver wheel (PostgreSQL binaries) is not installed ({exc}); "
            "pip install -e '.[dev]'") from None
    return Path(POSTGRES_BIN_PATH)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalPostgres:
    """A PostgreSQL server on 127.0.0.1 in a temporary directory; ``stop``/``start`` restart
    it on the same port and data (to test connection loss); ``close`` deletes everything."""

    def __init__(self, *, fsync: bool = False, settings: dict[str, str] | None = None) -> None:
        self.bin = _binaries()
        self.port = _free_port()
        self.fsync = fsync
        self.settings = {"max_connections": "300", **(settings or {})}
        self.root = Path(tempfile.mkdtemp(prefix="orchestra-pg-"))
        self.data = self.root / "data"
        self._user: str | None = None
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            self._user = "nobody"
            shutil.chown(self.root, user="nobody")
            # ``nobody`` may not be able to reach the wheel's directory (a checkout under
            # /root): run a linked copy of the binaries from the private directory instead
            # (the binaries find their libraries at $ORIGIN/../../../pgserver.libs)
            install = self.root / "pgserver" / "pginstall"
            libs = self.bin.parents[2] / "pgserver.libs"
            for source, target in ((self.bin.parent, install),
                                   (libs, self.root / "pgserver.libs")):
                if source.is_dir():
                    try:
                        shutil.copytree(source, target, copy_function=os.link)
                    except OSError:
                        shutil.rmtree(target, ignore_errors=True)
                        shutil.copytree(source, target)
            self.bin = install / "bin"
        self._proc: subprocess.Popen[bytes] | None = None
        self._initdb()

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, user=self._user, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def _initdb(self) -> None:
        done = self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                         "--auth=trust", "-E", "utf8", "--no-sync")
        if done.returncode != 0:
            self.close()
            raise PostgresUnavailable(f"initdb failed: {done.stderr.strip()[-500:]}")

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self, timeout: float = 60) -> None:
        args = [str(self.bin / "postgres"), "-D", str(self.data), "-h", "127.0.0.1",
                "-p", str(self.port), "-k", str(self.root),
                "-c", f"fsync={'on' if self.fsync else 'off'}"]
        for key, value in self.settings.items():
            args += ["-c", f"{key}={value}"]
        log = open(self.root / "log", "ab")  # the server process keeps it open
        self._proc = subprocess.Popen(args, user=self._user, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise PostgresUnavailable("postgres exited at start: " + self.log_tail())
            ready = subprocess.run([str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p",
                                    str(self.port), "-U", "postgres"], capture_output=True,
                                   check=False)
            if ready.returncode == 0:
                return
            time.sleep(0.1)
        raise PostgresUnavailable(f"postgres did not accept connections in {timeout} s: "
                                  + self.log_tail())

    def stop(self) -> None:
        """Fast shutdown (SIGINT): open connections are cut, committed data stays."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def psql(self, sql: str) -> str:
        done = subprocess.run([str(self.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                               "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                               "-d", "postgres", "-c", sql], capture_output=True, text=True,
                              check=False, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"psql {sql!r}: {done.stderr.strip()}")
        return done.stdout

    def create_database(self, name: str) -> str:
        """A new empty database; returns its DSN."""
        self.psql(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def log_tail(self) -> str:
        try:
            return (self.root / "log").read_text(errors="replace")[-1000:]
        except OSError:
            return ""

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


_shared: LocalPostgres | None = None
_shared_error: PostgresUnavailable | None = None


def shared_server() -> LocalPostgres:
    """One server for the whole process (tests, benchmarks), started on first use and
    deleted at exit; raises ``PostgresUnavailable`` (the same one each time) if it cannot run."""
    global _shared, _shared_error
    if _shared_error is not None:
        raise _shared_error
    if _shared is None:
        try:
            server = LocalPostgres()
            try:
                server.start()
            except BaseException:
                server.close()
                raise
        except PostgresUnavailable as exc:
            _shared_error = exc
            raise
        atexit.register(server.close)
        _shared = server
    return _shared


def main() -> None:
    """``python -m benchmarks.postgres.local [--fsync]``: a server for trying the
    PostgreSQL store by hand; prints its URL, stops (deleting everything) on Ctrl-C/SIGTERM."""
    import sys

    server = LocalPostgres(fsync="--fsync" in sys.argv)
    try:
        server.start()
        print(server.create_database("orchestra"), flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


if __name__ == "__main__":
    main()
