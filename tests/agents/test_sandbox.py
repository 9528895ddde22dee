"""Model-written tests run confined: under bubblewrap they can write only their
workspace and cannot reach the network; without it, a warning says so once."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

import agents.sandbox as sandbox_mod
from agents.sandbox import Sandbox, detect_sandbox
from agents.testrunner import run_pytest


def _bwrap() -> Sandbox:
    found = detect_sandbox()
    if found.kind != "bwrap":
        pytest.skip(f"needs a working bubblewrap (Debian package 'bubblewrap'): {found.reason}")
    return found


UNSANDBOXED = Sandbox.unsandboxed("the control run of this test")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    (path / "tests").mkdir(parents=True)
    return path


@pytest.fixture
def elsewhere() -> Iterator[Path]:
    """A writable directory outside the workspace and outside /tmp (the sandbox's /tmp
    is private, so a write there would vanish rather than fail)."""
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="orchestra-sandbox-") as d:
        yield Path(d)


def _test_file(root: Path, source: str) -> None:
    (root / "tests" / "test_model_wrote.py").write_text(textwrap.dedent(source))


async def test_a_write_outside_the_workspace_fails_inside_it_works(
        root: Path, elsewhere: Path) -> None:
    target = elsewhere / "escaped.txt"
    _test_file(root, f"""
        import subprocess
        from pathlib import Path

        def test_write_inside():
            Path("inside.txt").write_text("ok")

        def test_write_outside():
            Path({str(target)!r}).write_text("escaped")

        def test_write_home():
            (Path.home() / "orchestra-sandbox-escaped.txt").write_text("escaped")

        def test_remount_writable():
            # as root, a sandbox that kept its capabilities could undo the read-only bind
            subprocess.run(["mount", "-o", "remount,bind,rw", "/"], capture_output=True)
            Path({str(target)!r}).write_text("escaped")
    """)
    report = await run_pytest(root, sandbox=_bwrap())
    assert report.sandbox == "bwrap"
    assert (report.tests_passed, report.tests_failed) == (1, 3), report.output
    assert "Read-only file system" in report.output
    assert (root / "inside.txt").read_text() == "ok"
    assert not target.exists()
    assert not (Path.home() / "orchestra-sandbox-escaped.txt").exists()

    control = await run_pytest(root, sandbox=UNSANDBOXED)  # the same test can escape without
    assert control.sandbox == "none" and control.tests_passed == 4, control.output
    target.unlink()
    (Path.home() / "orchestra-sandbox-escaped.txt").unlink()


async def test_the_network_is_unreachable(root: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    try:
        _test_file(root, f"""
            import socket

            def test_connect():
                socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
        """)
        report = await run_pytest(root, sandbox=_bwrap())
        assert report.tests_failed == 1, report.output
        assert "ConnectionRefusedError" in report.output or "unreachable" in report.output
        control = await run_pytest(root, sandbox=UNSANDBOXED)  # the server is reachable
        assert control.passed, control.output
    finally:
        server.close()


async def test_private_tmp(root: Path) -> None:
    marker = Path(tempfile.gettempdir()) / f"orchestra-sandbox-tmp-{id(root)}"
    _test_file(root, f"""
        from pathlib import Path

        def test_tmp():
            Path({str(marker)!r}).write_text("in the sandbox's own /tmp")
            assert Path({str(marker)!r}).exists()
    """)
    report = await run_pytest(root, sandbox=_bwrap())
    assert report.passed, report.output
    assert not marker.exists()


def test_without_bwrap_a_warning_says_once_that_tests_run_unsandboxed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_mod, "_detected", None)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with capture_logs() as logs:
        first, second = detect_sandbox(), detect_sandbox()
    assert first == second and first.kind == "none"
    assert "apt-get install bubblewrap" in first.reason
    warnings = [e for e in logs if e.get("sandbox") == "none"]
    assert len(warnings) == 1 and "UNSANDBOXED" in warnings[0]["event"]
    assert "apt-get install bubblewrap" in warnings[0]["event"]  # what to do about it
    assert warnings[0]["log_level"] == "warning"


def test_a_broken_bwrap_is_reported_with_its_own_error(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    found = sandbox_mod._probe(str(fake))
    assert found.kind == "none"
    assert "No permissions to creating new namespace" in found.reason
    assert "user namespaces" in found.reason


def test_a_python_installed_under_tmp_stays_visible_read_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI clone (checkout and virtualenv) under /tmp: the private /tmp must not hide
    the interpreter's import path, or pytest cannot start inside the sandbox."""
    box = _bwrap()
    lib = tmp_path / "venv" / "lib"
    lib.mkdir(parents=True)
    (lib / "mod.py").write_text("X = 1\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(lib)])
    read = box.command(["cat", str(lib / "mod.py")], ws)
    assert subprocess.run(read, capture_output=True).stdout == b"X = 1\n"
    write = box.command(["touch", str(lib / "new.py")], ws)
    assert subprocess.run(write, capture_output=True).returncode != 0
    assert not (lib / "new.py").exists()
