"""A local GGUF model run in-process by llama.cpp, through the ``xllamacpp`` bindings.

``xllamacpp.Server`` loads the model and answers chat-completions JSON in-process
(the same format as the OpenAI adapter, so the conversion is shared). Its calls
block, so they run in a worker thread: the event loop is never blocked. Structured
output uses llama.cpp's JSON-schema constrained sampling.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import secrets
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from orchestra._errors import ModelAPIError, UserError
from orchestra.models._chat_format import ResponseFormatMode, ShapeError, chat_body, chat_response
from orchestra.models._guard import check_allowed
from orchestra.models._stream import fold_chunks, report_chunk
from orchestra.models.base import DeltaSink, ModelRequest, ModelResponse

__all__ = ["GGUFModel"]

_MAGIC = b"GGUF"


def _import_sdk() -> Any:
    try:
        return importlib.import_module("xllamacpp")  # untyped: used through Any
    except ImportError:
        raise UserError("the GGUF adapter needs xllamacpp: "
                        "pip install -e '.[local]' (from an orchestra checkout)") from None


class GGUFModel:
    """A GGUF file served by an in-process llama.cpp (loaded on the first request).

    ``n_threads`` defaults to the machine's CPU count; ``max_tokens`` caps a reply
    whose request settings set no limit (small models can repeat themselves until
    the context is full). ``n_ctx`` is the context it is loaded with, and also what
    the runtime compacts requests to fit (``context_tokens``). ``structured``:
    ``"auto"`` constrains a structured answer with llama.cpp's JSON-schema grammar
    when the request has no tools (wrap the model in ``JSONToolModel`` to constrain
    tool turns too); ``"json_object"``/``"none"`` loosen that.
    ``server_factory`` replaces ``xllamacpp.Server`` in tests.
    """

    name: str
    local = True  # weights on this machine: a call costs nothing to count

    def __init__(self, path: str | os.PathLike[str], *, n_threads: int | None = None,
                 n_ctx: int = 4096, name: str | None = None, max_tokens: int | None = 1024,
                 verbose: bool = False, structured: str = "auto",
                 server_factory: Callable[[], Any] | None = None) -> None:
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise UserError(f"GGUF model file not found: '{self.path}'. Check the path "
                            "(gguf:<path> takes a .gguf file).")
        with self.path.open("rb") as f:
            if f.read(4) != _MAGIC:
                raise UserError(f"'{self.path}' is not a GGUF model file (it does not start "
                                "with the GGUF magic bytes).")
        self._sdk = _import_sdk() if server_factory is None else None
        self.n_threads = n_threads or os.cpu_count() or 1
        if n_ctx < 256:
            raise UserError(f"GGUF model n_ctx={n_ctx}: too small for a chat; use 2048 or more")
        if structured not in ("auto", "json_schema", "json_object", "none"):
            raise UserError(f"GGUF model structured={structured!r}: use 'auto', "
                            "'json_schema', 'json_object' or 'none'")
        self.n_ctx = n_ctx
        self.context_tokens = n_ctx
        self.structured = structured
        self.max_tokens = max_tokens
        self.verbose = verbose
        self.name = name or f"gguf:{self.path}"
        self._factory = server_factory
        self._server: Any = None
        self._load_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GGUFModel(path='{self.path}', n_ctx={self.n_ctx}, name={self.name!r})"

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Run one chat completion in a worker thread."""
        return await self._request(request, None)

    async def request_stream(self, request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        """``request``, streamed: llama.cpp hands each chunk to a callback in the worker
        thread, which passes its pieces to ``sink`` on the event loop's thread. The
        chunks fold into the body a plain call returns."""
        return await self._request(request, sink)

    async def _request(self, request: ModelRequest, sink: DeltaSink | None) -> ModelResponse:
        check_allowed(self.name)
        body = chat_body(request, mode=self._format_mode(request))
        if request.settings.max_tokens is None and self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if request.settings.prompt_cache is False:
            body["cache_prompt"] = False  # the prompt computed afresh: see ModelSettings
        if sink is None:
            data = await asyncio.to_thread(self._complete, body)
        else:
            body |= {"stream": True, "stream_options": {"include_usage": True}}
            loop = asyncio.get_running_loop()
            data = await asyncio.to_thread(self._complete_streamed, body,
                                           lambda chunk: loop.call_soon_threadsafe(
                                               report_chunk, chunk, sink))
        try:
            return chat_response(data, model=self.name)
        except ShapeError as exc:
            raise self._error(f"unexpected response: {exc}") from None

    def close(self) -> None:
        """Free the model's memory; the next request loads it again."""
        with self._load_lock:
            self._server = None

    def _format_mode(self, request: ModelRequest) -> ResponseFormatMode:
        # llama.cpp constrains *every* reply to the schema, which would rule out tool
        # calls; with tools, the runtime validates the final JSON instead.
        if request.output is None or (self.structured == "auto" and request.tools):
            return "none"
        return "json_schema" if self.structured == "auto" else self.structured  # type: ignore[return-value]

    def _params(self) -> Any:
        assert self._sdk is not None
        params = self._sdk.CommonParams()
        params.model.path = str(self.path)
        params.n_ctx = self.n_ctx
        params.cpuparams.n_threads = self.n_threads
        params.cpuparams_batch.n_threads = self.n_threads
        params.use_jinja = True  # the model's own chat template, tool calls included
        params.verbosity = 3 if self.verbose else 0
        # The in-process server also listens on a random loopback port; a random key
        # keeps other local processes out of it.
        params.hostnames = ["127.0.0.1"]
        params.api_keys = [secrets.token_hex(16)]
        return params

    def _load(self) -> Any:
        with self._load_lock:
            if self._server is None:
                if self._factory is not None:
                    self._server = self._factory()
                else:
                    try:
                        self._server = self._sdk.Server(self._params())  # type: ignore[union-attr]
                    except RuntimeError as exc:
                        raise self._error(
                            f"llama.cpp could not load the model ({exc}). Check that the file "
                            "is a complete GGUF model and that n_ctx fits in memory.") from None
            return self._server

    def _complete(self, body: dict[str, Any]) -> Any:
        server = self._load()
        try:
            data = server.handle_chat_completions(body)
        except ValueError as exc:  # llama.cpp rejected the request body
            raise self._error(f"the request was rejected: {exc}", status=400) from None
        except RuntimeError as exc:
            raise self._error(f"llama.cpp failed: {exc}") from None
        if isinstance(data, Mapping) and "choices" not in data and (
                "error" in data or "code" in data):
            error = data.get("error", data)
            detail = error.get("message", error) if isinstance(error, Mapping) else error
            raise self._error(f"llama.cpp returned an error: {detail}")
        return data

    def _complete_streamed(self, body: dict[str, Any],
                           report: Callable[[dict[str, Any]], object]) -> Any:
        """One streamed completion (in the worker thread), folded into a response body."""
        chunks: list[dict[str, Any]] = []

        def on_chunk(chunk: Any) -> bool:
            if isinstance(chunk, Mapping) and "choices" in chunk:
                chunks.append(dict(chunk))
                report(dict(chunk))
            elif isinstance(chunk, Mapping):
                chunks.append({"error": dict(chunk)})
            return False  # go on

        server = self._load()
        try:
            server.handle_chat_completions(body, on_chunk)
        except ValueError as exc:
            raise self._error(f"the request was rejected: {exc}", status=400) from None
        except RuntimeError as exc:
            raise self._error(f"llama.cpp failed: {exc}") from None
        errors = [c["error"] for c in chunks if "error" in c]
        if errors:
            error = errors[0].get("error", errors[0])
            detail = error.get("message", error) if isinstance(error, Mapping) else error
            raise self._error(f"llama.cpp returned an error: {detail}")
        return fold_chunks(chunks)

    def _error(self, problem: str, status: int | None = None) -> ModelAPIError:
        return ModelAPIError(f"GGUF model '{self.path}': {problem}", model=self.name,
                             retryable=False, status=status)
