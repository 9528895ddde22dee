"""The CLI on a PostgreSQL store: --db URL and ORCHESTRA_DB, migrate, and no password in output."""

from __future__ import annotations

import json

import pytest
from pg_helpers import with_password

from orchestra.cli.main import main


def test_migrate_runs_and_show_take_a_url_and_never_print_its_password(
        dsn: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    url = with_password(dsn, "s3cr3t-pw")
    assert main(["migrate", "--db", url]) == 0
    out = capsys.readouterr().out
    assert "up to date (0 runs)" in out and "postgres:***@" in out
    monkeypatch.setenv("ORCHESTRA_DB", url)
    assert main(["runs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"runs": [], "next_cursor": None}
    assert main(["show", "nope"]) == 2  # an unknown run: a usage error naming it
    captured = capsys.readouterr()
    assert "nope" in captured.err
    unreachable = url.replace(url.split("@")[1].split("/")[0], "127.0.0.1:1")
    assert main(["runs", "--db", unreachable]) == 1
    captured = capsys.readouterr()
    for text in (out, captured.out, captured.err):
        assert "s3cr3t-pw" not in text
