"""Opt-in: the stock pipeline builds a kata module on a real local model.

``ORCHESTRA_LLAMA_URL=http://127.0.0.1:8080/v1 pytest -m llama tests/llama`` (start the
server with ``../shared/tools/llama-server.sh 8080``), or ``ORCHESTRA_GGUF_PATH=q.gguf``
for the in-process adapter. Each spec's run must end by itself within
``ORCHESTRA_LLAMA_PIPELINE_LIMIT`` seconds (default 600) and write the module and its
tests; the hidden tests' results are printed (the measurement, not a pass condition:
a 0.5B model writes wrong code often). ``measure.py`` runs the same thing repeatedly
and tabulates it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from measure import SPECS, measure

URL = os.environ.get("ORCHESTRA_LLAMA_URL")
GGUF = os.environ.get("ORCHESTRA_GGUF_PATH")

pytestmark = [
    pytest.mark.llama,
    pytest.mark.skipif(not (URL or GGUF), reason="set ORCHESTRA_LLAMA_URL (a llama.cpp "
                       "server's /v1 URL) or ORCHESTRA_GGUF_PATH (a .gguf file)"),
]


def model_spec() -> str:
    if URL:
        return f"openai-compatible:{URL}#local?timeout=600&context=8192"
    return f"gguf:{GGUF}?n_ctx=8192"


@pytest.mark.parametrize("spec", SPECS)
def test_the_pipeline_writes_the_module_and_its_tests(spec: str) -> None:
    limit = float(os.environ.get("ORCHESTRA_LLAMA_PIPELINE_LIMIT", "600"))
    row = measure(spec, model_spec(), limit + 60, keep=None)
    print(f"\n{row}")
    assert row["exit"] != "killed", f"the run did not end by itself within {limit + 60:g} s"
    assert row["wall_s"] <= limit, row
    assert f"kata/{spec}.py" in row["files"] and f"tests/test_{spec}.py" in row["files"], row
