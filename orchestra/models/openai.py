"""OpenAI and OpenAI-compatible servers (ollama, llama.cpp, vLLM) over chat completions.

Built on the official ``openai`` SDK's ``AsyncOpenAI`` with the SDK's retries off:
retries, backoff and error wording come from :mod:`orchestra.models._http` so every
adapter behaves the same.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from orchestra._errors import ContextOverflowError, UserError
from orchestra._log import get_logger
from orchestra._secrets import mask_url
from orchestra.models._chat_format import ResponseFormatMode, ShapeError, chat_body, chat_response
from orchestra.models._context import probe_context
from orchestra.models._guard import check_allowed
from orchestra.models._http import (
    Backoff,
    Endpoint,
    Failure,
    call_with_retries,
    classify_sdk_error,
    load_key,
)
from orchestra.models._stream import (
    LoopGuard,
    StreamError,
    cut_off,
    fold_chunks,
    report_chunk,
    sse_chunks,
)
from orchestra.models.base import DeltaSink, ModelRequest, ModelResponse

if TYPE_CHECKING:
    import openai as openai_sdk

__all__ = ["JSONSchemaMode", "OpenAIModel"]

JSONSchemaMode = Literal["auto", "json_schema", "json_object", "none"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
_DUMMY_KEY = "orchestra-no-key"  # local servers ignore the key, the SDK insists on one
_DEGRADE: dict[ResponseFormatMode, ResponseFormatMode] = {
    "json_schema": "json_object", "json_object": "none", "none": "none"}
_RANK: dict[ResponseFormatMode, int] = {"json_schema": 2, "json_object": 1, "none": 0}

_log = get_logger("orchestra.models")


def _import_sdk() -> Any:
    try:
        import openai
    except ImportError:
        raise UserError("the OpenAI adapter needs the openai SDK: "
                        "pip install -e '.[openai]' (from an orchestra checkout)") from None
    return openai


def is_loopback(base_url: str) -> bool:
    """True when ``base_url`` is a server on this host (llama.cpp, ollama, vLLM)."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "localhost" or host == "::1" or host.startswith("127.")


def is_official_openai(base_url: str) -> bool:
    """True when ``base_url`` points at OpenAI's own API."""
    return (urlsplit(base_url).hostname or "").lower() == "api.openai.com"


class _Silence(Exception):
    """A streamed answer went silent for longer than the timeout."""


class _FormatRejected(Exception):
    """The server refused the ``response_format`` we sent (handled by degrading it)."""


class OpenAIModel:
    """A chat-completions model: OpenAI itself or any OpenAI-compatible server.

    ``json_schema_mode`` picks how a structured output is requested: ``"auto"`` sends
    a JSON-schema ``response_format`` when the request has no tools or the server is
    OpenAI's (local servers constrain *every* reply to the schema, which would make
    tool calls impossible; :class:`~orchestra.models.json_tools.JSONToolModel` turns
    tools into that schema instead). OpenAI's own API gets the strict form of the
    schema (decoding constrained to it); llama.cpp, vLLM, LM Studio and Ollama
    (which turns it into its ``format``) constrain decoding to the schema as sent.
    A 400 that rejects the format degrades it once to ``json_object`` and then to
    none, remembered for this instance; the runtime validates the JSON either way.
    ``context_tokens`` is the served model's context window, when known: the
    runtime compacts requests to fit it. Given none, :meth:`context_window` asks a
    local or self-hosted server once (llama.cpp, vLLM, LM Studio); a request the
    server refuses as too long narrows it to the window the refusal names.

    ``concurrency`` caps the requests in flight at once (default: unbounded for OpenAI,
    1 for other servers): a llama.cpp or Ollama server with one slot queues a second
    request without a word, and its silence would run out the timeout of a request the
    server has not begun; waiting here, the timeout starts when the server does.
    ``stream`` (default: on for every server but OpenAI's own) streams the answer:
    ``timeout`` then limits *silence* (no token for that long), not the answer's
    length, so a slow local model writing a long file is never cut off by it. After a
    timeout the retry asks for half the ``max_tokens`` (never the identical long
    request again).

    The key comes from ``api_key``, else ``OPENAI_API_KEY`` for OpenAI's API (or a
    base URL taken from ``OPENAI_BASE_URL``), else ``OPENAI_COMPATIBLE_API_KEY`` for
    other servers, which also work without one.
    """

    name: str

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 max_retries: int = 4, timeout: float = 120.0,
                 json_schema_mode: JSONSchemaMode = "auto", name: str | None = None,
                 backoff: Backoff | None = None, context_tokens: int | None = None,
                 stream: bool | None = None, concurrency: int | None = None) -> None:
        if not model:
            raise UserError("OpenAIModel needs a model name, e.g. OpenAIModel('gpt-4.1-mini')")
        if json_schema_mode not in ("auto", "json_schema", "json_object", "none"):
            raise UserError(f"json_schema_mode={json_schema_mode!r}: use 'auto', "
                            "'json_schema', 'json_object' or 'none'")
        self._sdk = _import_sdk()
        env_base = os.environ.get("OPENAI_BASE_URL")
        self.base_url = (base_url or env_base or OPENAI_BASE_URL).rstrip("/")
        self.model = model
        self.official = is_official_openai(self.base_url)
        self.local = is_loopback(self.base_url)  # a server on this host: nothing billed
        key_env = ("OPENAI_API_KEY" if self.official or (base_url is None and env_base)
                   else "OPENAI_COMPATIBLE_API_KEY")
        key = load_key(api_key, key_env)
        if not key and self.official:
            raise UserError(f"OpenAI model {model!r}: no API key. Set OPENAI_API_KEY "
                            "(or pass api_key=...).")
        self.__api_key = key or _DUMMY_KEY
        self.max_retries = max_retries
        self.timeout = timeout
        self.stream = (not self.official) if stream is None else stream
        self._may_stream = stream is not False  # request_stream streams unless told not to
        if concurrency is not None and concurrency < 1:
            raise UserError(f"concurrency={concurrency!r}: give a number of requests >= 1")
        self.concurrency = concurrency if concurrency is not None else (
            None if self.official else 1)
        self._gate: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self.context_tokens = context_tokens
        self._asked_size = False  # the server was asked its context window (once)
        self._size_gate: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self.json_schema_mode: JSONSchemaMode = json_schema_mode
        self.backoff = backoff or Backoff()
        self.name = name or (f"openai:{model}" if self.official
                             else f"openai-compatible:{mask_url(self.base_url)}#{model}")
        self._endpoint = Endpoint(model=model, base_url=self.base_url,
                                  key_env=f"{key_env} (or api_key=...)",
                                  provider="OpenAI" if self.official else "OpenAI-compatible",
                                  secrets=(self.__api_key,))
        self._degraded: ResponseFormatMode = "json_schema"
        self._client: openai_sdk.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return (f"OpenAIModel(model={self.model!r}, base_url={mask_url(self.base_url)!r}, "
                f"name={self.name!r})")

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send one chat-completions call, retrying transient failures."""
        return await self._request(request, None)

    async def request_stream(self, request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        """``request``, streamed (unless made with ``stream=False``), each piece of the
        answer told to ``sink`` as it arrives; a retry tells it ``retry()`` first."""
        return await self._request(request, sink if self._may_stream else None)

    async def _request(self, request: ModelRequest, sink: DeltaSink | None) -> ModelResponse:
        check_allowed(self.name)
        timeouts = [0]  # this call's timed-out attempts: each retry asks for less
        tries = [0]

        def classify(exc: Exception) -> Failure | None:
            failure = self._classify(exc, request)
            if isinstance(exc, (_Silence, self._sdk.APITimeoutError)):
                timeouts[0] += 1
            return failure

        while True:
            mode = self._format_mode(request)
            try:
                return await call_with_retries(
                    functools.partial(self._shrunk_attempt, request, mode, timeouts, sink,
                                      tries), classify,
                    max_retries=self.max_retries, backoff=self.backoff, model=self.name)
            except _FormatRejected:
                self._degraded = _DEGRADE[mode]
                _log.info("model.response_format_fallback", model=self.name,
                          rejected=mode, now=self._degraded)

    async def context_window(self) -> int | None:
        """The served model's context window: the one given (``?context=`` wins), else
        the one the server says, asked at the first call and kept (concurrent first
        calls ask once), else None. OpenAI's own API says none: it is not asked. A
        failed probe leaves None, logged once; requests then go unfitted, as before."""
        if self.context_tokens is not None or self.official or self._asked_size:
            return self.context_tokens
        try:
            check_allowed(self.name)
        except UserError:  # requests are off (tests): the request itself will say so
            return None
        async with self._size_lock():
            if not self._asked_size:
                window, where = await probe_context(self.base_url, self.model,
                                                    api_key=self.__api_key)
                self._asked_size = True
                if window is None:
                    _log.info("model.context_unknown", model=self.name, asked=where)
                elif self.context_tokens is None:  # a refusal may have named it meanwhile
                    self.context_tokens = window
                    _log.info("model.context_learned", model=self.name, context=window,
                              source=where)
        return self.context_tokens

    def _size_lock(self) -> asyncio.Lock:
        """This event loop's lock around the one probe (a new loop gets its own)."""
        loop = asyncio.get_running_loop()
        if self._size_gate is None or self._size_gate[0] is not loop:
            self._size_gate = (loop, asyncio.Lock())
        return self._size_gate[1]

    def _narrow(self, error: ContextOverflowError) -> None:
        """A refusal for size names the served window: later requests fit it."""
        served = error.context_tokens
        if served is not None and (self.context_tokens is None or served < self.context_tokens):
            _log.warning("model.context_refused", model=self.name, context=served,
                         was=self.context_tokens)
            self.context_tokens = served

    async def aclose(self) -> None:
        """Close the HTTP connections (the model stays usable; a new client is made)."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _format_mode(self, request: ModelRequest) -> ResponseFormatMode:
        if request.output is None:
            return "none"
        wanted: ResponseFormatMode
        if self.json_schema_mode == "auto":
            wanted = "json_schema" if not request.tools or self.official else "none"
        else:
            wanted = self.json_schema_mode
        return wanted if _RANK[wanted] <= _RANK[self._degraded] else self._degraded

    async def _sdk_client(self) -> openai_sdk.AsyncOpenAI:
        # An httpx pool is bound to the loop that opened it; a new loop gets a new client.
        # It is built in a thread: loading the TLS certificates reads files.
        loop = asyncio.get_running_loop()
        if self._client is not None and self._client_loop is loop:
            return self._client
        client: openai_sdk.AsyncOpenAI = await asyncio.to_thread(functools.partial(
            self._sdk.AsyncOpenAI, api_key=self.__api_key, base_url=self.base_url,
            max_retries=0, timeout=self.timeout))
        self._client, self._client_loop = client, loop
        return client

    async def _attempt(self, request: ModelRequest, mode: ResponseFormatMode,
                       sink: DeltaSink | None) -> ModelResponse:
        body = chat_body(request, mode=mode, max_tokens_field=(
            "max_completion_tokens" if self.official else "max_tokens"), strict=self.official)
        if request.settings.prompt_cache is False and not self.official:
            body["extra_body"] = {"cache_prompt": False}  # llama.cpp: the prompt afresh
        try:
            if self.stream or sink is not None:
                data = await self._streamed(body, self._timeout(request), sink)
            else:
                completion = await (await self._sdk_client()).chat.completions.create(
                    model=self.model, timeout=self._timeout(request), **body)
                data = (completion.model_dump() if hasattr(completion, "model_dump")
                        else completion)
        except self._sdk.BadRequestError as exc:
            if mode != "none" and _rejects_format(exc.body, exc.message):
                raise _FormatRejected from None
            raise
        try:
            return chat_response(data, model=self.model)
        except ShapeError as exc:
            raise self._endpoint.bad_shape(str(exc)) from None

    async def _shrunk_attempt(self, request: ModelRequest, mode: ResponseFormatMode,
                              timeouts: list[int], sink: DeltaSink | None,
                              tries: list[int]) -> ModelResponse:
        if sink is not None and tries[0]:
            sink.retry()
        tries[0] += 1
        if self.concurrency is None:
            return await self._attempt(_shrunk(request, timeouts[0]), mode, sink)
        async with self._slot():  # held per attempt: a backoff sleep frees it
            return await self._attempt(_shrunk(request, timeouts[0]), mode, sink)

    def _slot(self) -> asyncio.Semaphore:
        """This event loop's gate of ``concurrency`` requests (a new loop gets its own)."""
        loop = asyncio.get_running_loop()
        if self._gate is None or self._gate[0] is not loop:
            self._gate = (loop, asyncio.Semaphore(self.concurrency or 1))
        return self._gate[1]

    async def _streamed(self, body: dict[str, Any], seconds: float,
                        sink: DeltaSink | None) -> Any:
        """One streamed call folded into a response body (a server that answers with
        plain JSON despite ``stream`` is read as such); ``sink`` hears each chunk."""
        client = await self._sdk_client()
        async with client.chat.completions.with_streaming_response.create(
                model=self.model, timeout=seconds, stream=True,
                stream_options={"include_usage": True}, **body) as response:
            try:
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    return json.loads(await response.read())
                chunks, guard = [], LoopGuard()
                async for chunk in sse_chunks(response.iter_lines()):
                    chunks.append(chunk)
                    if sink is not None:
                        report_chunk(chunk, sink)
                    if guard.looping(chunk):  # closing the stream stops the server too
                        _log.info("model.reply_looping", model=self.name, chars=guard.window)
                        return cut_off(fold_chunks(chunks), chunks, body.get("messages") or [])
                return fold_chunks(chunks)
            except Exception as exc:  # the SDK maps errors of the send, not of the body
                names = {k.__name__ for k in type(exc).__mro__}
                if "TimeoutException" in names:
                    raise _Silence from None
                if "TransportError" in names:  # the server closed mid-answer
                    raise StreamError(f"the stream broke off ({type(exc).__name__})") from None
                raise

    def _timeout(self, request: ModelRequest) -> float:
        return request.settings.timeout or self.timeout

    def _classify(self, exc: Exception, request: ModelRequest) -> Failure | None:
        if isinstance(exc, StreamError):
            return self._endpoint.malformed(exc)
        if isinstance(exc, _Silence):
            return self._endpoint.timed_out(self._timeout(request))
        failure = classify_sdk_error(self._sdk, self._endpoint, exc, self._timeout(request))
        if failure is not None and isinstance(failure.error, ContextOverflowError):
            self._narrow(failure.error)
        return failure


def _shrunk(request: ModelRequest, timeouts: int) -> ModelRequest:
    """``request`` after ``timeouts`` timed-out attempts: half the ``max_tokens`` each
    time (at least 256), so a retry is never the same long request again."""
    cap = request.settings.max_tokens
    if not timeouts or cap is None:
        return request
    settings = dataclasses.replace(request.settings, max_tokens=max(256, cap >> timeouts))
    return dataclasses.replace(request, settings=settings)


def _rejects_format(body: object, message: str) -> bool:
    """True when a 400 says the server does not support the ``response_format`` sent."""
    text = f"{json.dumps(body, default=str)} {message}".lower()
    return any(word in text for word in ("response_format", "response format",
                                         "json_schema", "json_object"))
