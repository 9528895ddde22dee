"""The board without a browser: login and session cookie, CSRF and Origin checks on
every form, cancel and resume, bad input, and ``orchestra board --open``."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.board.board_api import AUTH, PIPELINE, detail, start, wait_status
from tests.board.conftest import TOKEN
from tests.server.server_helpers import Server, child_env

BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, html[:500]
    return found.group(1)


def _login(url: str) -> tuple[httpx.Client, str]:
    """A logged-in browser-like client and the CSRF token of its pages."""
    c = httpx.Client(base_url=url, headers=BROWSER)
    token = _csrf(c.get("/login").text)
    r = c.post("/login", data={"csrf": token, "token": TOKEN, "next": "/"})
    assert r.status_code == 303 and r.headers["location"] == "/"
    return c, token


def test_pages_need_a_login_and_the_cookie_is_httponly_strict(server: Server) -> None:
    c = httpx.Client(base_url=server.url, headers=BROWSER)
    r = c.get("/runs/x?y=1")
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/runs/x%3Fy%3D1"
    api = httpx.get(f"{server.url}/runs/x")  # not a browser: the API's answer
    assert api.status_code == 401 and api.headers["www-authenticate"] == "Bearer"
    r = c.get("/login")
    assert r.status_code == 200 and "HttpOnly" in r.headers["set-cookie"]
    token = _csrf(r.text)
    assert c.post("/login", data={"token": TOKEN}).status_code == 403  # no CSRF token
    wrong = c.post("/login", data={"csrf": token, "token": "guess"})
    assert wrong.status_code == 401 and "not this server&#39;s token" in wrong.text
    r = c.post("/login", data={"csrf": token, "token": TOKEN, "next": "//evil.example/"})
    assert r.status_code == 303 and r.headers["location"] == "/"  # no open redirect
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN not in cookie
    assert c.get("/").status_code == 200
    assert c.get("/v1/runs").status_code == 200  # the page's reads (the event stream)
    write = c.post("/v1/runs", json={"pipeline": PIPELINE, "input": {}})
    assert write.status_code == 403 and "bearer" in write.json()["detail"]
    assert httpx.get(f"{server.url}/v1/runs").status_code == 401
    assert httpx.get(f"{server.url}/v1/runs", headers=AUTH).status_code == 200
    c.post("/logout", data={"csrf": token})
    assert c.get("/").status_code == 303


def test_forms_need_their_csrf_token_and_origin_and_cancel_resume_work(
        server: Server) -> None:
    c, token = _login(server.url)
    run_id = start(server.url, plan=False, turns=1, deploy=True)
    wait_status(server.url, run_id, "waiting")
    page = c.get(f"/runs/{run_id}").text
    assert "Yes, cancel the run" in page and "Approve" in page
    assert c.post(f"/runs/{run_id}/cancel", data={}).status_code == 403
    assert c.post(f"/runs/{run_id}/cancel", data={"csrf": "0" * 64}).status_code == 403
    foreign = c.post(f"/runs/{run_id}/cancel", data={"csrf": token},
                     headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403
    assert detail(server.url, run_id)["status"] == "waiting"  # nothing happened
    [approval] = detail(server.url, run_id)["approvals_pending"]
    bad = c.post(f"/runs/{run_id}/approvals/{approval['id']}",
                 data={"csrf": token, "decision": "maybe"})
    assert bad.status_code == 422 and "approve or deny" in bad.text
    missing = c.post(f"/runs/{run_id}/approvals/nope", data={"csrf": token,
                                                              "decision": "approve"})
    assert missing.status_code == 404 and "nope" in missing.text
    assert "text/html" in missing.headers["content-type"]  # a page, not a problem document
    r = c.post(f"/runs/{run_id}/cancel", data={"csrf": token},
               headers={"Origin": server.url})
    assert r.status_code == 303 and r.headers["location"] == f"/runs/{run_id}"
    assert detail(server.url, run_id)["status"] == "cancelled"
    again = c.post(f"/runs/{run_id}/resume", data={"csrf": token})
    assert again.status_code == 409 and "cancelled" in again.text
    late = c.post(f"/runs/{run_id}/approvals/{approval['id']}",
                  data={"csrf": token, "decision": "approve"})
    assert late.status_code in (303, 409)


def test_a_paused_run_shows_its_cap_and_resumes_from_the_page_with_a_higher_one(
        server: Server) -> None:
    c, token = _login(server.url)
    r = httpx.post(f"{server.url}/v1/runs", headers=AUTH, json={
        "pipeline": PIPELINE, "input": {"plan": False, "turns": 6}, "max_tokens": 60})
    run_id = r.json()["run_id"]
    wait_status(server.url, run_id, "paused")
    listed = c.get("/", params={"status": "paused"}).text
    assert run_id in listed and 's-paused">paused' in listed
    page = c.get(f"/runs/{run_id}").text
    assert "reached its token cap" in page and 'name="max_tokens"' in page
    bad = c.post(f"/runs/{run_id}/resume", data={"csrf": token, "max_tokens": "lots"})
    assert bad.status_code == 422 and "whole number" in bad.text
    same = c.post(f"/runs/{run_id}/resume", data={"csrf": token})
    assert same.status_code == 409 and "still 60" in same.text
    ok = c.post(f"/runs/{run_id}/resume", data={"csrf": token, "max_tokens": "100000"})
    assert ok.status_code == 303
    wait_status(server.url, run_id, "completed")


def test_the_agent_page_marks_what_recall_returned(server: Server) -> None:
    c, _ = _login(server.url)
    run_id = start(server.url, plan=False, turns=14, recall=True)
    wait_status(server.url, run_id, "completed")
    html = c.get(f"/runs/{run_id}/agents/worker").text
    assert html.count("what recall returned") == 2  # in the history and in the view
    assert "in view" in html and "dropped" in html


def test_unknown_runs_and_agents_are_404_pages(server: Server) -> None:
    c, _ = _login(server.url)
    r = c.get("/runs/nope")
    assert r.status_code == 404 and "nope" in r.text and "text/html" in r.headers["content-type"]
    run_id = start(server.url, plan=False, turns=0)
    assert c.get(f"/runs/{run_id}/agents/ghost").status_code == 404


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("open") / "open.db").start()
    try:
        yield srv
    finally:
        srv.stop()


def test_without_a_token_pages_are_open_but_forms_still_need_csrf(
        open_server: Server) -> None:
    c = httpx.Client(base_url=open_server.url)
    r = c.get("/")
    assert r.status_code == 200 and "Log out" not in r.text
    assert c.get("/login").status_code == 303
    run_id = httpx.post(f"{open_server.url}/v1/runs", json={
        "pipeline": PIPELINE, "input": {"plan": False, "deploy": True}}).json()["run_id"]
    token = _csrf(c.get(f"/runs/{run_id}").text)
    assert c.post(f"/runs/{run_id}/cancel", data={}).status_code == 403
    assert c.post(f"/runs/{run_id}/cancel", data={"csrf": token}).status_code == 303


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestra.cli.main", *args], cwd=tmp,
                          env=child_env(), capture_output=True, text=True, timeout=120)


def test_board_open_prints_the_page_url(open_server: Server, tmp_path: Path) -> None:
    run_id = httpx.post(f"{open_server.url}/v1/runs",
                        json={"pipeline": PIPELINE, "input": {"plan": False}}).json()["run_id"]
    ok = _cli(tmp_path, "board", run_id, "--open", "--server", open_server.url)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == f"{open_server.url}/runs/{run_id}"
    assert httpx.get(ok.stdout.strip()).status_code == 200
    missing = _cli(tmp_path, "board", "nope", "--open", "--server", open_server.url)
    assert missing.returncode != 0 and "no run 'nope'" in missing.stderr
    down = _cli(tmp_path, "board", run_id, "--open", "--server", "http://127.0.0.1:9")
    assert down.returncode == 7 and "is `orchestra serve` running" in down.stderr
    no_open = _cli(tmp_path, "board", run_id, "--server", open_server.url)
    assert no_open.returncode != 0 and "add --open" in no_open.stderr


def test_events_embedded_in_a_page_cannot_end_their_script_element() -> None:
    from orchestra.server.web.pages import _script_json

    text = str(_script_json([{"data": {"x": "</script><script>alert(1)</script>&"}}]))
    assert "<" not in text and ">" not in text and "&" not in text
    import json

    assert json.loads(text) == [{"data": {"x": "</script><script>alert(1)</script>&"}}]
