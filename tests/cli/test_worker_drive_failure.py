"""A drive that fails in `orchestra worker` is reported and its run left for a while; the
worker goes on with the others (before, the error ended the worker)."""

from __future__ import annotations

import argparse
import asyncio
import time

import pytest

from orchestra._types import Run
from orchestra.cli import worker_cmd


async def _failed(exc: BaseException) -> asyncio.Task[Run]:
    async def drive() -> Run:
        raise exc

    job = asyncio.create_task(drive())
    await asyncio.wait([job])
    return job


@pytest.mark.parametrize("json_mode", [False, True])
async def test_a_failed_drive_is_reported_and_its_run_skipped(
        json_mode: bool, capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(json=json_mode)
    skipped: dict[str, float] = {}
    job = await _failed(RuntimeError("the store went away"))
    assert worker_cmd._ended(args, "r1", job, skipped)
    assert skipped["r1"] == pytest.approx(time.monotonic() + worker_cmd.RETRY_UNSERVABLE, abs=1)
    out = capsys.readouterr().out
    assert "driving run r1 failed (RuntimeError: the store went away)" in out
    assert ('"retry_in_s": 30.0' in out) == json_mode


async def test_a_cancelled_drive_is_neither_reported_nor_skipped(
        capsys: pytest.CaptureFixture[str]) -> None:
    job = asyncio.create_task(asyncio.sleep(10))
    job.cancel()
    await asyncio.wait([job])
    skipped: dict[str, float] = {}
    assert not worker_cmd._ended(argparse.Namespace(json=False), "r1", job, skipped)  # type: ignore[arg-type]
    assert skipped == {} and capsys.readouterr().out == ""
