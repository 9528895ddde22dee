"""A role that reads a git repository through ``mcp-server-git`` (a real server from the
package index), offline: a scripted model asks for the log and reports the latest commit.
The run is recorded; a second run replays the recording with the server *absent* (its
command does not exist): the tool list and the call's result come from the recording's
tool tape, and the answer is the same.

    pip install -e '.[mcp]' mcp-server-git    # (`.[dev]` has both)
    python examples/mcp_git.py
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from orchestra import (
    Coordinator,
    FunctionModel,
    MCPServer,
    Model,
    ModelRequest,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    reply,
    tool_call,
)
from orchestra.models.record import RecordingModel, ReplayModel

GIT_SERVER = shutil.which("mcp-server-git") or str(Path(sys.executable).with_name(
    "mcp-server-git"))


def historian(command: str, repo: Path) -> Role:
    class Historian(Role):
        """You answer questions about a git repository with the git tools."""

        # git_log, git_status, git_diff, ... (git_commit and git_reset too: a side-effecting
        # call cut short by a crash would wait for a person, never be sent twice silently)
        mcp = [MCPServer.stdio(command, ["--repository", str(repo)], name="git",
                               include=["git_log", "git_status"])]

    return Historian()


def scripted(repo: Path) -> FunctionModel:
    """Asks for the last commits, then answers with what the log said."""

    def answer(request: ModelRequest) -> Any:
        results = [m.content for m in request.messages if m.role == "tool"]
        if not results:
            return reply("", tool_call("git_log", {"repo_path": str(repo), "max_count": 1},
                                       id="c1"))
        message = [line.strip() for line in results[0].splitlines() if line.strip()][-1]
        return reply(f"the latest commit says: {message}")

    return FunctionModel(answer)


def make_pipeline(command: str, repo: Path, model: Model) -> Pipeline:
    return Pipeline("history", roles=[historian(command, repo)],
                    start=lambda inp: [NewTask("historian", inp)], model=model)


def make_repo(repo: Path) -> None:
    git = ["git", "-C", str(repo), "-c", "user.name=Ada", "-c", "user.email=ada@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("hello\n")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Add a greeting"], check=True)


async def main(tmp: Path) -> None:
    repo, recording = tmp / "repo", tmp / "session.jsonl"
    make_repo(repo)
    store = await SQLiteBlackboard.open(tmp / "history.db")
    try:
        live = Coordinator(store, make_pipeline(GIT_SERVER, repo, RecordingModel(
            scripted(repo), recording)))
        run = await live.run("what was the last change?")
        await live.mcp.aclose()  # (the process's end would stop the server too)
        (task,) = await store.list_tasks(run.id)
        print(f"run {run.id}: {run.status}: {task.result}")
        for step in await store.get_steps(task.id, task.retries):
            print(f"  step {step.step}: {step.kind} {step.name}")
        # a new run from the recording, the server's command missing: nothing is started
        replay = await asyncio.to_thread(ReplayModel, recording)
        offline = Coordinator(store, make_pipeline("/nonexistent/mcp-server-git", repo, replay))
        again = await offline.run("what was the last change?")
        (task2,) = await store.list_tasks(again.id)
        print(f"replay {again.id} (server absent): {again.status}, same answer: "
              f"{task2.result == task.result}")
    finally:
        await store.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
