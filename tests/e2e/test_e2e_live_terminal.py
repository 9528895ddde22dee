"""`orchestra run` on a terminal (a pseudo-terminal here) redraws one line per active
agent with what it is writing, as it writes; without a terminal it appends the
finished lines as ``role | line``; with --json or -q it adds nothing of the kind."""

from __future__ import annotations

import itertools
import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest
from e2e_helpers import REPO, child_env, cli, cli_argv

pytestmark = pytest.mark.slow
PIPELINE = "tests.cli.stream_pipeline:build"
SLOW = json.dumps({"lines": 4, "size": 6, "every": 0.03})
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def on_a_terminal(*args: str, timeout: float = 90.0) -> str:
    """What the command wrote to a pseudo-terminal, escape sequences and all."""
    master, slave = pty.openpty()
    env = child_env() | {"COLUMNS": "200", "LINES": "50", "TERM": "xterm"}
    proc = subprocess.Popen(cli_argv(*args), stdin=slave, stdout=slave, stderr=slave,
                            env=env, cwd=REPO, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        proc.wait(timeout=30)
    assert proc.returncode == 0, out.decode(errors="replace")[-3000:]
    return out.decode(errors="replace")


def writer_lines(screen: str) -> list[str]:
    """Each drawn version of the writer's live line, in order."""
    return [m.group(1).rstrip() for m in re.finditer(r"  writer\s+\| (.*)", ANSI.sub("", screen))]


def test_a_terminal_sees_each_agents_line_update_in_place(tmp_path: Path) -> None:
    screen = on_a_terminal("run", "--pipeline", PIPELINE, "--input", SLOW,
                           "--db", str(tmp_path / "o.db"))
    assert "\x1b[" in screen  # redrawn in place, not appended
    versions = list(dict.fromkeys(writer_lines(screen)))
    assert len(versions) >= 3, versions  # the line changed as the model wrote
    first = "writer line 1: " + "words " * 6
    assert first.startswith(versions[0]) or versions[0].startswith(first)  # its beginning
    for shorter, longer in itertools.pairwise(versions):
        assert len(longer.replace(" ⏎ ", "\n")) >= len(shorter.replace(" ⏎ ", "\n"))
    assert any("writer line 3" in v for v in versions)
    critic = re.findall(r"  critic\s+\| (.*)", ANSI.sub("", screen))
    assert critic  # both agents at once, one line each


def test_plain_output_appends_finished_lines_and_json_or_q_add_none(tmp_path: Path) -> None:
    plain = cli("run", "--pipeline", PIPELINE, "--input", SLOW, "--db", tmp_path / "a.db")
    assert plain.code == 0, plain
    written = [line for line in plain.stdout.splitlines() if line.startswith("writer | ")]
    assert written == [f"writer | writer line {i}: " + "words " * 6 for i in range(1, 5)]
    assert "\x1b[" not in plain.stdout
    for flag in ("--json", "-q", "--no-tokens"):
        res = cli("run", "--pipeline", PIPELINE, "--input", SLOW, "--db",
                  tmp_path / f"{flag}.db", flag)
        assert res.code == 0, res
        assert " | " not in res.stdout and "model.delta" not in res.stdout, (flag, res.stdout)
