"""Suite-wide guards: no real model requests unless a test opts in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import orchestra.models._guard as guard


@pytest.fixture(autouse=True)
def _no_real_models(request: pytest.FixtureRequest) -> Iterator[None]:
    guard.ALLOW_MODEL_REQUESTS = bool(request.node.get_closest_marker("llama"))
    yield
    guard.ALLOW_MODEL_REQUESTS = True
