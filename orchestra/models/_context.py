"""How large a served model's context is: asked of the server, or read from its refusal.

A user who writes no ``?context=`` in the model spec should still get requests that
fit. OpenAI-compatible servers say how large their window is, each in its own place
(``root`` is the base URL without its ``/v1``):

* llama.cpp: ``GET {root}/props`` -> ``default_generation_settings.n_ctx`` (one slot's
  window: what a request must fit), and ``GET {base}/models`` -> ``data[i].meta.n_ctx``;
* vLLM: ``GET {base}/models`` -> ``data[i].max_model_len``;
* LM Studio: ``GET {root}/api/v0/models`` -> ``data[i].loaded_context_length``.

Ollama says only the window a model was trained with (its served ``num_ctx`` is smaller
and it truncates silently), so it is not asked. When a request is refused as too long
anyway, the refusal names the window: :func:`refusal_sizes` reads it from llama.cpp's
``exceed_context_size_error``, vLLM's and OpenAI's "maximum context length is M tokens"
and Anthropic's "prompt is too long: N tokens > M maximum".
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["from_models", "from_props", "probe_context", "refusal_sizes"]

PROBE_TIMEOUT = 3.0
"""Seconds one probe may take: a server that is slow to say its size is not waited for."""

_LLAMA = re.compile(r"request \((\d+) tokens\) exceeds the available context size "
                    r"\((\d+) tokens\)")
_MAX_LEN = re.compile(r"maximum context length is (\d+) tokens")
_ASKED = re.compile(r"(?:requested|resulted in|has|have) (\d+) (?:input )?tokens")
_ANTHROPIC = re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum")


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def from_props(data: object) -> int | None:
    """The window in a llama.cpp ``/props`` answer (a slot's ``n_ctx``)."""
    if not isinstance(data, Mapping):
        return None
    settings = data.get("default_generation_settings")
    if isinstance(settings, Mapping) and _positive(settings.get("n_ctx")):
        return _positive(settings.get("n_ctx"))
    return _positive(data.get("n_ctx"))


def from_models(data: object, model: str) -> int | None:
    """The window in a model list (``/v1/models`` of vLLM or llama.cpp, LM Studio's
    ``/api/v0/models``): the entry named ``model``, else the only entry."""
    entries = data.get("data") if isinstance(data, Mapping) else None
    if not isinstance(entries, list) or not entries:
        return None
    named = [e for e in entries if isinstance(e, Mapping) and e.get("id") == model]
    entry = named[0] if named else entries[0] if len(entries) == 1 else None
    if not isinstance(entry, Mapping):
        return None
    meta = entry.get("meta")
    return (_positive(entry.get("max_model_len")) or _positive(entry.get("loaded_context_length"))
            or (_positive(meta.get("n_ctx")) if isinstance(meta, Mapping) else None))


async def probe_context(base_url: str, model: str, *, api_key: str | None,
                        seconds: float | None = None) -> tuple[int | None, str]:
    """(the served window, the URL that said it), or (None, why none did).

    Asks the places in the module doc in turn; a server that cannot be reached is not
    asked again (each probe would wait out the same timeout). ``api_key`` is sent as a
    bearer token, as the chat calls send it (vLLM's ``--api-key`` guards ``/v1/models``);
    no reason ever quotes a header."""
    import httpx  # the openai SDK's own transport, present wherever this runs

    root = base_url.removesuffix("/v1")
    probes = ((f"{root}/props", from_props),
              (f"{base_url}/models", functools.partial(from_models, model=model)),
              (f"{root}/api/v0/models", functools.partial(from_models, model=model)))
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    said: list[str] = []
    # made in a thread: an httpx client loads the TLS certificates from files
    client = await asyncio.to_thread(functools.partial(
        httpx.AsyncClient, timeout=seconds or PROBE_TIMEOUT, headers=headers,
        follow_redirects=True))
    async with client:
        for url, read in probes:
            path = url.removeprefix(root) or "/"
            try:
                response = await client.get(url)
            except httpx.HTTPError as exc:
                said.append(f"{path}: {type(exc).__name__}")
                break
            if response.status_code != 200:
                said.append(f"{path}: HTTP {response.status_code}")
                continue
            try:
                window = read(response.json())
            except (json.JSONDecodeError, UnicodeDecodeError):
                said.append(f"{path}: not JSON")
                continue
            if window is not None:
                return window, path
            said.append(f"{path}: no context size")
    return None, "; ".join(said)


def refusal_sizes(body: object, message: str) -> tuple[int | None, int | None] | None:
    """(the window, the tokens counted) when an error body or message says the request
    exceeds the model's context (either may be None if the server did not say); None
    when it says something else."""
    error: Any = body.get("error", body) if isinstance(body, Mapping) else body
    if isinstance(error, Mapping) and error.get("type") == "exceed_context_size_error":
        return _positive(error.get("n_ctx")), _positive(error.get("n_prompt_tokens"))
    text = f"{json.dumps(body, default=str) if body is not None else ''} {message}"
    if found := _LLAMA.search(text):
        return int(found[2]), int(found[1])
    if found := _ANTHROPIC.search(text):
        return int(found[2]), int(found[1])
    if found := _MAX_LEN.search(text):
        asked = _ASKED.search(text, found.end())
        return int(found[1]), int(asked[1]) if asked else None
    if isinstance(error, Mapping) and error.get("code") == "context_length_exceeded":
        return None, None
    return None
