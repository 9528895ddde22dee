"""In CI nothing of the project's own may skip (issue 27, item 16).

With ``ORCHESTRA_CI=1`` (``.ci/run`` sets it) a skipped test that is not marked
``llama`` (the opt-in tests against a downloaded real model) fails the session, naming
each such test and its reason; ``.ci/run`` also prints every skip with ``-rs``.
Loaded by ``tests/conftest.py``."""

from __future__ import annotations

import os

import pytest

ALLOWED_MARKER = "llama"
_skipped: list[tuple[str, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not report.skipped or ALLOWED_MARKER in report.keywords:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    _skipped.append((report.nodeid, str(reason).removeprefix("Skipped: ")))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("ORCHESTRA_CI") != "1" or not _skipped:
        return
    lines = [f"  {nodeid}: {reason}" for nodeid, reason in _skipped]
    print("\nci: these tests skipped, and in CI only `llama` tests may (install what they "
          "need, or fix the test):\n" + "\n".join(lines))
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
