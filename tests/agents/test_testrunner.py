"""The real pytest runner (sandboxed or not), on real files in tmp_path."""

from __future__ import annotations

import asyncio
import os
import re
import textwrap
import time
from pathlib import Path

import pytest

from agents.sandbox import Sandbox, detect_sandbox
from agents.testrunner import TestReport, run_pytest
from agents.workspace import WorkspaceError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


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
    assert not list(root.glob("**/__pycache__"))

    report = await run_pytest(root)
    assert not report.passed and not report.timed_out
    assert (report.exit_code, report.tests_passed, report.tests_failed) == (1, 1, 1)
    assert "assert 4 == 5" in report.output


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
