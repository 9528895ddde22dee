"""Library logs never reach stdout: stderr by default, the user's structlog config if any."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog

from orchestra._log import get_logger


@pytest.fixture(autouse=True)
def _unconfigured() -> Iterator[None]:
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


def test_unconfigured_logs_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    log = get_logger("orchestra.test")
    log.info("hello", run="r1")
    log.bind(task="t1").warning("bound")
    out = capsys.readouterr()
    assert out.out == ""
    assert "hello" in out.err and "run=r1" in out.err and "task=t1" in out.err


def test_the_users_configuration_wins(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[dict[str, object]] = []

    def keep(_logger: object, _name: str, event: dict[str, object]) -> str:
        seen.append(event)
        return "kept"

    log = get_logger("orchestra.test")  # made before the user configures (module import)
    structlog.configure(processors=[keep])
    log.info("hello", run="r1")
    assert seen == [{"event": "hello", "run": "r1"}]
    assert capsys.readouterr().err == ""
