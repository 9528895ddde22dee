"""One server shared by the tests that need no special flags (start-up costs ~1 s)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from server_helpers import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("serve")
    flags = ("--ping-interval", "0.3", "--liveness-interval", "0.3")
    srv = Server(root / "serve.db", args=flags).start()
    try:
        yield srv
    finally:
        srv.stop()
