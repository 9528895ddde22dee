"""One token-protected server shared by the board's tests (the browser logs in once
per page, as a person would)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server.server_helpers import Server

TOKEN = "board-test-token-0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("board")
    token_file = root / "token"
    token_file.write_text(TOKEN + "\n")
    srv = Server(root / "board.db", args=("--token-file", str(token_file),
                                          "--ping-interval", "1")).start()
    try:
        yield srv
    finally:
        srv.stop()
