"""The guard against blocking calls on the event loop (blockbuster), as pydantic-ai's
suite has it, for the runtime, CLI and server suites; ``conftest.py`` makes it autouse.
The store suites keep their own (no SQLite on the loop, ``conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from blockbuster import blockbuster_ctx

_BLOCKING_GUARDED = ("runtime", "cli", "server", "mcp")


def no_blocking_on_the_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test during which orchestra made a blocking call (file, socket, sleep,
    SQLite...) on an event loop's thread; calls a test makes itself are its own business."""
    if request.node.path.parent.name not in _BLOCKING_GUARDED:
        yield
        return
    with blockbuster_ctx("orchestra") as guard:
        for calls, where, functions, _reason in BLOCKING_ALLOWED:
            for call in calls:
                guard.functions[call].can_block_in(where, functions)
        yield


_FILE_CHECKS = ("os.stat", "os.access", "os.path.abspath", "os.getcwd", "os.mkdir",
                "os.rmdir", "os.listdir", "os.scandir", "io.BufferedReader.read",
                "io.TextIOWrapper.read")
"""A few small file-system calls: a path checked, a header or a spec file read."""

BLOCKING_ALLOWED: list[tuple[tuple[str, ...], str, set[str], str]] = [
    # (blocking calls, file, functions in it, why they may block the loop there)
    (_FILE_CHECKS, "orchestra/store/sqlite/schema.py", {"check_file", "_check_can_create"},
     "opening a store reads the file's 16-byte header and checks its directory inline: "
     "cheaper than a hop to a thread, and done once per open, before any run is served"),
    (_FILE_CHECKS, "orchestra/cli/commands.py",
     {"_workspace", "open_store"},
     "`orchestra run` makes its workspace and checks the store's file before the run "
     "starts (nothing else is on the loop yet; ruff's ASYNC240 is waived for the CLI for "
     "the same reason)"),
    (_FILE_CHECKS, "orchestra/coordinator/pipeline.py", {"load_pipeline"},
     "a pipeline's factory is its author's code, called once before the run starts (the "
     "stock one makes the run's workspace directories)"),
]
"""Every exemption from the guard above, each with its reason."""
