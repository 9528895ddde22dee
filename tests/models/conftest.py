"""Fixtures for the adapter tests: the loopback wire server, a sleep recorder, a clean env."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from model_wire import MODEL_ENV, SleepRecorder, WireServer

from orchestra.models import _guard
from orchestra.models._http import Backoff


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer()
    yield server
    server.close()


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def backoff(sleeps: SleepRecorder) -> Backoff:
    return Backoff(base_delay=0.01, max_delay=0.05, sleep=sleeps)


@pytest.fixture(autouse=True)
def _model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # These adapters talk to the scripted loopback server, not to a real model.
    monkeypatch.setattr(_guard, "ALLOW_MODEL_REQUESTS", True)
    for name in MODEL_ENV:
        monkeypatch.delenv(name, raising=False)
