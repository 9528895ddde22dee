"""The API calls the board's tests make around the browser (with the bearer token)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.board.conftest import TOKEN
from tests.server.server_helpers import wait_for

PIPELINE = "tests.board.board_pipeline:build"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def start(url: str, **run_input: Any) -> str:
    r = httpx.post(f"{url}/v1/runs", json={"pipeline": PIPELINE, "input": run_input},
                   headers=AUTH)
    assert r.status_code == 202, r.text
    run_id: str = r.json()["run_id"]
    return run_id


def detail(url: str, run_id: str) -> dict[str, Any]:
    found: dict[str, Any] = httpx.get(f"{url}/v1/runs/{run_id}", headers=AUTH).json()
    return found


def wait_status(url: str, run_id: str, status: str, timeout: float = 120) -> dict[str, Any]:
    return wait_for(lambda: (d := detail(url, run_id))["status"] == status and d,
                    timeout=timeout, what=f"run {run_id} {status}")


def messages(url: str, run_id: str, role: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = httpx.get(
        f"{url}/v1/runs/{run_id}/agents/{role}/messages", params={"limit": 1000},
        headers=AUTH).json()["messages"]
    return found
