"""The runtime, CLI and server suites fail a blocking call orchestra makes on the event
loop (tests/conftest.py, blockbuster); each exemption names its reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from blockbuster import BlockingError
from blocking_guard import BLOCKING_ALLOWED

from orchestra.store import url as store_url


async def test_a_blocking_call_by_orchestra_on_the_loop_fails_the_test(tmp_path: Path) -> None:
    with pytest.raises(BlockingError, match=r"os\.stat"):
        store_url.exists(tmp_path / "board.db")  # os.path.exists, on the loop's thread


def test_the_same_call_off_the_loop_is_fine(tmp_path: Path) -> None:
    assert not store_url.exists(tmp_path / "board.db")


def test_every_exemption_says_why() -> None:
    for calls, where, functions, reason in BLOCKING_ALLOWED:
        assert calls and functions and len(reason) > 40, where
        assert (Path(__file__).parents[2] / where).is_file(), f"{where} moved: update it"
