"""A user's pipeline module that does not import is the user's error in their own
terms: file, line, the source line with a caret, exit 2, no `Traceback` and no frame of
orchestra's; over HTTP a 422 problem document (issue 27, item 4)."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from e2e_helpers import REPO, Result, cli

sys.path.insert(0, str(REPO / "tests" / "server"))
from server_helpers import Server

MODULES = {
    "badpipe": "import os\nx = foo(\n",
    "imppipe": "import os\nimport no_such_dependency_xyz\n",
    "errpipe": "def helper():\n    return {}['missing']\n\n\nhelper()\n",
    "nofactory": "def make_pipeline(run_input):\n    return None\n\n\nLIMIT = 3\n",
}


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    for name, source in MODULES.items():
        (tmp_path / f"{name}.py").write_text(source)
    return tmp_path


def _run(user_dir: Path, module: str) -> Result:
    result = cli("run", "--pipeline", f"{module}:build_pipeline", "--db",
                 user_dir / "o.db", cwd=user_dir)
    assert result.code == 2, result
    assert "Traceback" not in result.stderr and "orchestra/" not in result.stderr, result
    assert result.stderr.startswith(f"orchestra: error: cannot import pipeline "
                                    f"'{module}:build_pipeline'") or module == "nofactory"
    return result


def test_a_syntax_error_names_file_line_and_shows_the_caret(user_dir: Path) -> None:
    err = _run(user_dir, "badpipe").stderr
    assert "badpipe.py line 2: '(' was never closed" in err, err
    assert "    x = foo(\n" in err and "^" in err.splitlines()[-1]


def test_errors_inside_the_module_show_the_users_frames_only(user_dir: Path) -> None:
    err = _run(user_dir, "imppipe").stderr
    assert "imppipe.py\", line 2" in err and "no_such_dependency_xyz" in err, err
    err = _run(user_dir, "errpipe").stderr
    assert "errpipe.py\", line 5" in err and "errpipe.py\", line 2, in helper" in err, err
    assert "KeyError: 'missing'" in err
    assert not (user_dir / "o.db").exists()  # nothing was created for a run never made


def test_a_missing_factory_lists_what_the_module_has(user_dir: Path) -> None:
    err = _run(user_dir, "nofactory").stderr
    assert "has no 'build_pipeline'" in err and "it has make_pipeline" in err, err
    assert "LIMIT" not in err


def test_over_http_a_bad_module_is_a_422_problem(user_dir: Path) -> None:
    server = Server(user_dir / "serve.db", args=("--workers", "0"),
                    env={"PYTHONPATH": f"{REPO}:{user_dir}"}).start()
    try:
        for module, needle in (("badpipe", "'(' was never closed"),
                               ("errpipe", "KeyError"), ("imppipe", "no_such_dependency")):
            r = httpx.post(f"{server.url}/v1/runs",
                           json={"pipeline": f"{module}:build_pipeline", "input": {}})
            assert r.status_code == 422, r.text
            assert r.headers["content-type"] == "application/problem+json"
            assert needle in r.json()["detail"]
    finally:
        server.stop()
