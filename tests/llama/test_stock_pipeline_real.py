"""Opt-in: the stock pipeline builds each kata on a real local model.

``ORCHESTRA_LLAMA_URL=http://127.0.0.1:8080/v1 pytest -n 0 -m llama tests/llama`` (start the
server with ``../shared/tools/llama-server.sh 8080``), or ``ORCHESTRA_GGUF_PATH=q.gguf``
for the in-process adapter. Each kata's run (``benchmarks/katas``) must end by itself
within ``ORCHESTRA_LLAMA_PIPELINE_LIMIT`` seconds (default 900) with default settings and
write every module the spec names; the hidden tests' results are printed (the
measurement, not a pass condition). ``python -m benchmarks.pipeline_quality`` runs the
same thing beside the one-shot baseline, repeatedly, and tabulates it.
"""

from __future__ import annotations

import os

import pytest

from benchmarks.katas import kata_names, load_kata
from benchmarks.pipeline_quality import measure

URL = os.environ.get("ORCHESTRA_LLAMA_URL")
GGUF = os.environ.get("ORCHESTRA_GGUF_PATH")

pytestmark = [
    pytest.mark.llama,
    pytest.mark.skipif(not (URL or GGUF), reason="set ORCHESTRA_LLAMA_URL (a llama.cpp "
                       "server's /v1 URL) or ORCHESTRA_GGUF_PATH (a .gguf file)"),
]


def model_spec() -> str:
    return f"openai-compatible:{URL}#local" if URL else f"gguf:{GGUF}?n_ctx=8192"


@pytest.mark.parametrize("name", kata_names())
def test_the_pipeline_writes_every_module_and_ends_by_itself(name: str) -> None:
    limit = float(os.environ.get("ORCHESTRA_LLAMA_PIPELINE_LIMIT", "900"))
    kata = load_kata(name)
    row = measure(kata, "orchestra", model_spec(), limit=limit + 60, max_tokens=0, keep=False)
    print(f"\n{row}")
    assert row["ended_by_itself"], f"the run did not end by itself within {limit + 60:g} s"
    assert row["wall_s"] <= limit, row
    assert row["wrote_every_module"], row
