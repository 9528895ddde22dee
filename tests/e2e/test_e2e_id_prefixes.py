"""One id resolver everywhere (issue 27, item 11): a unique prefix of a run or approval id
works for every command, through a store file or ``--server``, and for ``copy --run`` and
``board --open``; an ambiguous prefix lists the candidates."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from e2e_helpers import REPO, cli, query

from orchestra._errors import NotFoundError, UserError
from orchestra._ids import resolve_prefix

sys.path.insert(0, str(REPO / "tests" / "server"))
from server_helpers import Server

pytestmark = pytest.mark.slow


def test_the_resolver() -> None:
    ids = ["ab12", "ab34", "cd56"]
    assert resolve_prefix("run", "cd", ids) == "cd56"
    assert resolve_prefix("run", "ab12", ids) == "ab12"
    with pytest.raises(UserError, match=r"'ab' is ambiguous: it matches ab12, ab34"):
        resolve_prefix("run", "ab", ids)
    with pytest.raises(NotFoundError, match=r"no approval 'zz'; look there"):
        resolve_prefix("approval", "zz", ids, hint="look there")


def _parked(db: Path, tmp_path: Path) -> tuple[str, str]:
    res = cli("run", "--pipeline", "examples.approval:make_pipeline", "--input",
              json.dumps({"log": str(tmp_path / "published.log")}), "--db", db, cwd=REPO)
    assert res.code == 4, res
    approval = re.search(r"waiting for approval (\w+)", res.stdout)
    assert approval, res
    return res.stdout.split()[1], approval.group(1)


def test_prefixes_through_a_store_file_and_copy(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    run_id, approval = _parked(db, tmp_path)
    denied = cli("deny", approval[:6], "--db", db, "--reason", "not today", cwd=REPO)
    assert denied.code == 0 and f"approval {approval} denied" in denied.stdout, denied
    copied = cli("copy", "--from", db, "--to", tmp_path / "b.db", "--run", run_id[:5])
    assert copied.code == 0 and f"run {run_id}: copied" in copied.stdout, copied
    assert query(tmp_path / "b.db", "SELECT id FROM runs") == [(run_id,)]


def test_prefixes_through_the_server(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    run_id, approval = _parked(db, tmp_path)
    server = Server(db, args=("--workers", "0"), env={"PYTHONPATH": str(REPO)}).start()
    try:
        url = server.url
        shown = cli("show", run_id[:5], "--server", url)
        assert shown.code == 0 and f"run {run_id}" in shown.stdout, shown
        page = cli("board", run_id[:5], "--open", "--server", url)
        assert page.code == 0 and page.stdout.strip() == f"{url}/runs/{run_id}", page
        decided = cli("approve", approval[:6], "--server", url)
        assert decided.code == 0 and f"approval {approval} approved" in decided.stdout, decided
    finally:
        server.stop()
