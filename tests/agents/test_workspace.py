"""Workspace confinement and the real pytest runner, on real files in tmp_path."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import textwrap
import threading
import time
from pathlib import Path

import pytest

from agents.sandbox import Sandbox, detect_sandbox
from agents.testrunner import TestReport, run_pytest
from agents.workspace import Workspace, WorkspaceError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding a file an agent must never touch."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("do not read")
    return path


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root, max_file_bytes=1024, max_list_entries=50)


def _names(directory: Path, pattern: str = "*") -> list[str]:
    return sorted(p.name for p in directory.glob(pattern))


# -- path confinement ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "reason"),
    [
        ("../outside/secret.txt", "'..'"),
        ("a/../../outside/secret.txt", "'..'"),
        ("a/../b.txt", "'..'"),
        ("/etc/passwd", "absolute"),
        ("", "empty"),
        ("   ", "empty"),
        ("a\x00b.txt", "NUL"),
    ],
)
async def test_unsafe_paths_are_rejected_everywhere(ws: Workspace, rel: str, reason: str) -> None:
    with pytest.raises(WorkspaceError, match=reason):
        ws.resolve(rel)
    with pytest.raises(WorkspaceError, match=reason):
        await ws.read_file(rel)
    with pytest.raises(WorkspaceError, match=reason):
        await ws.write_file(rel, "x")
    with pytest.raises(WorkspaceError, match=reason):
        await ws.delete_file(rel)


async def test_symlinked_file_pointing_outside_is_refused(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await ws.read_file("link.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await ws.write_file("link.txt", "overwritten")
    assert (outside / "secret.txt").read_text() == "do not read"
    assert await ws.list_files() == []


async def test_symlinked_directory_pointing_outside_is_refused(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "src").mkdir()
    (root / "src" / "escape").symlink_to(outside, target_is_directory=True)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await ws.read_file("src/escape/secret.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await ws.write_file("src/escape/new/planted.py", "x = 1")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await ws.list_files("src/escape")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await ws.delete_file("src/escape/secret.txt")
    assert _names(outside) == ["secret.txt"]
    assert await ws.list_files() == []


async def test_symlinks_that_stay_inside_are_followed(ws: Workspace, root: Path) -> None:
    (root / "real.txt").write_text("hello")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert await ws.read_file("alias.txt") == "hello"
    await ws.delete_file("alias.txt")  # removes the link, not the file it names
    assert (root / "real.txt").read_text() == "hello"
    assert not (root / "alias.txt").exists()


def test_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="not a directory"):
        Workspace(tmp_path / "missing")


# -- reading, writing, listing --------------------------------------------------------


async def test_write_then_read_round_trips(ws: Workspace, root: Path) -> None:
    content = "def f() -> str:\n    return 'héllo'\n"
    result = await ws.write_file("./pkg/sub/mod.py", content)
    data = content.encode()
    assert result == {
        "path": "pkg/sub/mod.py",
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    assert await ws.read_file("pkg/sub/mod.py") == content
    assert (root / "pkg/sub/mod.py").stat().st_mode & 0o777 == 0o644


async def test_write_is_atomic_and_off_the_event_loop(
    ws: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ws.write_file("a.txt", "old")
    threads: list[int] = []

    def crash(src: str, dst: Path) -> None:
        threads.append(threading.get_ident())
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        await ws.write_file("a.txt", "new content")
    assert (root / "a.txt").read_text() == "old"
    assert _names(root) == ["a.txt"]  # temp file cleaned up
    assert threads and threads[0] != threading.get_ident()


async def test_size_limits(ws: Workspace, root: Path) -> None:
    (root / "big.txt").write_text("x" * 1025)
    with pytest.raises(WorkspaceError, match="1025 bytes, over the 1024-byte read limit"):
        await ws.read_file("big.txt")
    with pytest.raises(WorkspaceError, match="over the 1024-byte write limit"):
        await ws.write_file("new.txt", "é" * 513)  # 1026 bytes in UTF-8
    assert not (root / "new.txt").exists()
    assert (await ws.write_file("ok.txt", "x" * 1024))["bytes"] == 1024


async def test_binary_files_are_refused(ws: Workspace, root: Path) -> None:
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(WorkspaceError, match="binary"):
        await ws.read_file("img.png")
    with pytest.raises(WorkspaceError, match="not UTF-8"):
        await ws.read_file("latin1.txt")


async def test_read_errors_name_the_path(ws: Workspace, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(WorkspaceError, match=r"'missing\.py' does not exist"):
        await ws.read_file("missing.py")
    with pytest.raises(WorkspaceError, match="'d' is a directory"):
        await ws.read_file("d")
    with pytest.raises(WorkspaceError, match="'d' is a directory"):
        await ws.write_file("d", "x")
    with pytest.raises(WorkspaceError, match="'d' is a directory"):
        await ws.delete_file("d")


async def test_a_missing_path_is_answered_with_what_exists(ws: Workspace, root: Path) -> None:
    """A weak model asks again and again for the path it expected: the error tells it
    what there is instead (or that there is nothing yet to read)."""
    with pytest.raises(WorkspaceError, match="no files yet, so there is nothing to read"):
        await ws.read_file("kata/rle.py")
    with pytest.raises(WorkspaceError, match="no files yet"):
        await ws.list_files("kata/rle.py")
    (root / "kata").mkdir()
    (root / "kata" / "a.py").write_text("")
    with pytest.raises(WorkspaceError, match=r"'kata/b\.py' does not exist; the workspace's "
                                             r"files are: kata/a\.py$"):
        await ws.read_file("kata/b.py")
    for i in range(30):
        (root / f"f{i:02}.txt").write_text("")
    with pytest.raises(WorkspaceError, match=r"f19\.txt and 11 more$"):
        await ws.list_files("nope")


async def test_listing_is_recursive_sorted_and_skips_caches(ws: Workspace, root: Path) -> None:
    for rel in [
        "b.py", "a/z.py", "a/b/c.py", ".gitignore",
        "__pycache__/b.cpython-311.pyc", "a/__pycache__/z.pyc",
        ".pytest_cache/v/cache", ".git/HEAD", ".venv/lib/site.py",
    ]:  # fmt: skip
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    assert await ws.list_files() == [".gitignore", "a/b/c.py", "a/z.py", "b.py"]
    assert await ws.list_files("a") == ["a/b/c.py", "a/z.py"]
    with pytest.raises(WorkspaceError, match="is a file"):
        await ws.list_files("b.py")


async def test_listing_limit(ws: Workspace, root: Path) -> None:
    for i in range(51):
        (root / f"f{i}.txt").write_text("")
    with pytest.raises(WorkspaceError, match="more than 50 files; list a subdirectory"):
        await ws.list_files()


async def test_delete_file(ws: Workspace, root: Path) -> None:
    await ws.write_file("gone.txt", "x")
    await ws.delete_file("gone.txt")
    assert not (root / "gone.txt").exists()
    with pytest.raises(WorkspaceError, match="does not exist"):
        await ws.delete_file("gone.txt")


# -- running pytest ------------------------------------------------------------------


def _write(root: Path, rel: str, source: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(textwrap.dedent(source))


async def test_run_pytest_passing_and_failing(root: Path) -> None:
    _write(root, "calc.py", "def add(a, b):\n    return a + b\n")
    _write(
        root,
        "tests/test_calc.py",
        """
        from calc import add

        def test_add():
            assert add(2, 2) == 4

        def test_add_wrong():
            assert add(2, 2) == 5
    """,
    )
    report = await run_pytest(root, "tests/test_calc.py::test_add")
    assert isinstance(report, TestReport)
    assert (report.passed, report.exit_code, report.tests_passed) == (True, 0, 1)
    assert report.command[-1] == "tests/test_calc.py::test_add"
    assert not (root / ".pytest_cache").exists()
    assert not _names(root, "**/__pycache__")

    report = await run_pytest(root)
    assert not report.passed and not report.timed_out
    assert (report.exit_code, report.tests_passed, report.tests_failed) == (1, 1, 1)
    assert "assert 4 == 5" in report.output

    async_test = "import pytest\n\n@pytest.mark.asyncio\nasync def test_sleep():\n    pass\n"
    _write(root, "tests/test_async.py", async_test)
    report = await run_pytest(root, "tests/test_async.py", plugins=["asyncio"])
    assert report.command[-3:] == ["-p", "asyncio", "tests/test_async.py"]
    assert report.passed


async def test_run_pytest_output_does_not_depend_on_the_terminal_width(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI and a laptop must see the same output: recorded sessions replay against it."""
    _write(root, "tests/test_w.py", "def test_w():\n    assert 'a' * 30 == 'a' * 31\n")
    outputs = []
    for columns in ("40", "200"):
        monkeypatch.setenv("COLUMNS", columns)
        report = await run_pytest(root)
        assert report.tests_failed == 1
        outputs.append(_strip_timing(report.output))
    assert outputs[0] == outputs[1]


async def test_run_pytest_output_does_not_depend_on_the_callers_ci_or_pytest_settings(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under CI=true pytest stops truncating its summary lines; the child must not see it."""
    _write(root, "tests/test_w.py", "def test_w():\n    assert 'a' * 30 == 'b' * 90\n")
    plain = _strip_timing((await run_pytest(root)).output)
    for name, value in [
        ("CI", "true"),
        ("BUILD_NUMBER", "7"),
        ("PY_COLORS", "1"),
        ("PYTEST_ADDOPTS", "-v -rA"),
        ("PYTHONWARNINGS", "error"),
    ]:
        monkeypatch.setenv(name, value)
    report = await run_pytest(root)
    assert report.tests_failed == 1
    assert _strip_timing(report.output) == plain


def _strip_timing(output: str) -> str:
    return re.sub(r"in \d+(?:\.\d+)?s", "", output)


async def test_run_pytest_counts_collection_errors(root: Path) -> None:
    _write(root, "tests/test_broken.py", "import not_a_module\n")
    report = await run_pytest(root)
    assert not report.passed
    assert report.tests_errors == 1
    assert "not_a_module" in report.output


async def test_no_tests_collected_is_not_a_pass(root: Path) -> None:
    _write(root, "tests/helper.py", "X = 1\n")
    report = await run_pytest(root, "tests")
    assert (report.passed, report.exit_code) == (False, 5)
    assert report.output.startswith("[pytest collected no tests (exit code 5)")


async def test_parent_config_and_conftest_are_ignored(tmp_path: Path) -> None:
    """A workspace nested in a project must not run that project's conftest.py."""
    (tmp_path / "conftest.py").write_text("raise SystemExit('parent conftest imported')\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --no-such-option\n")
    root = tmp_path / "ws"
    _write(root, "tests/test_ok.py", "def test_ok():\n    pass\n")
    report = await run_pytest(root)
    assert report.passed, report.output


@pytest.mark.parametrize(
    ("target", "reason"),
    [("../x.py", "'..'"), ("/tmp", "absolute"), ("-p", "starts with '-'"),
     ("tests/nope.py", "does not exist")],
)  # fmt: skip
async def test_run_pytest_target_is_confined(root: Path, target: str, reason: str) -> None:
    with pytest.raises(WorkspaceError, match=reason):
        await run_pytest(root, target)


# The test forks a child that detaches (setsid: a new session and process group) and
# forks again, so neither the process group nor the session reaches the grandchild.
_HANGING_TEST = """
import os, subprocess, sys, time
from pathlib import Path

def test_hang():
    if os.fork() == 0:
        os.setsid()
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(333)", "TAG"])
        os._exit(0)
    os.wait()
    Path("child.started").write_text("yes")
    time.sleep(60)
"""


def _tagged_alive(tag: str) -> list[int]:
    """Live (non-zombie) processes whose command line holds ``tag``."""
    alive = []
    for entry in Path("/proc").iterdir():
        try:
            if tag.encode() in (entry / "cmdline").read_bytes().split(b"\0") and \
                    "State:\tZ" not in (entry / "status").read_text():
                alive.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return alive


def _hanging(root: Path) -> str:
    tag = f"orchestra-test-{os.getpid()}-{time.monotonic_ns()}"
    _write(root, "tests/test_hang.py", _HANGING_TEST.replace("TAG", tag))
    return tag


def _gone(tag: str) -> bool:
    for _ in range(100):
        if not _tagged_alive(tag):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sandboxed", [True, False], ids=["bwrap", "unsandboxed"])
async def test_timeout_kills_the_whole_tree_even_a_detached_grandchild(
        root: Path, sandboxed: bool) -> None:
    sandbox = _sandbox(sandboxed)
    tag = _hanging(root)
    started = time.monotonic()
    report = await run_pytest(root, timeout=6.0, sandbox=sandbox)
    assert time.monotonic() - started < 20
    assert report.timed_out and not report.passed
    assert report.exit_code < 0
    assert "timed out after 6s" in report.output
    assert (root / "child.started").exists(), "the test did not get to fork in time"
    assert _gone(tag), "a detached grandchild of the test survived the timeout"


@pytest.mark.parametrize("sandboxed", [True, False], ids=["bwrap", "unsandboxed"])
async def test_cancelling_the_run_kills_the_whole_tree(root: Path, sandboxed: bool) -> None:
    sandbox = _sandbox(sandboxed)
    tag = _hanging(root)
    run = asyncio.create_task(run_pytest(root, timeout=60.0, sandbox=sandbox))
    for _ in range(600):
        if (root / "child.started").exists() and _tagged_alive(tag):
            break
        await asyncio.sleep(0.05)
    assert _tagged_alive(tag), "the grandchild never started"
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert _gone(tag)


def _sandbox(sandboxed: bool) -> Sandbox:
    if not sandboxed:
        return Sandbox.unsandboxed("this test checks the unsandboxed kill")
    found = detect_sandbox()
    if found.kind != "bwrap":
        pytest.skip(f"needs a working bubblewrap: {found.reason}")
    return found


async def test_long_output_keeps_head_and_tail(root: Path) -> None:
    _write(
        root,
        "tests/test_noisy.py",
        """
        def test_noisy():
            print("HEAD-MARK " + "x" * 50_000 + " TAIL-MARK")
            assert False
    """,
    )
    report = await run_pytest(root, max_output=2000)
    assert re.search(r"\[\.\.\. \d+ bytes truncated \.\.\.\]", report.output)
    assert len(report.output) < 2100
    assert report.output.startswith("F")
    assert "short test summary info" in report.output[-1000:]
    assert report.tests_failed == 1  # parsed from the tail even though output was cut


def test_report_is_plain_data() -> None:
    report = TestReport(
        passed=True, exit_code=0, tests_passed=1, tests_failed=0, tests_errors=0,
        duration_s=0.5, output="", timed_out=False, command=["pytest"],
    )  # fmt: skip
    assert TestReport.model_validate_json(report.model_dump_json()) == report
