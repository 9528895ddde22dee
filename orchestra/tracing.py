"""OpenTelemetry tracing: spans run → task → step, composed into a run only when asked.

``Coordinator(store, pipeline, tracing=Tracing())`` (needs ``pip install -e '.[otel]'``)
emits, through the global tracer provider or the one given:

* ``orchestra.run`` — one per drive of a run (start or resume), with ``orchestra.run.id``
  and the pipeline. Each records its span context in the run's event log
  (``trace.span``); a resumed run's span **links** to the spans of every earlier drive,
  so a trace viewer joins the work before and after a crash.
* ``orchestra.task`` — one per task attempt, child of the run span, with the task,
  agent, role and attempt as attributes.
* steps inside a task: ``chat {model}`` for each model call (GenAI semantic conventions:
  ``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.response.model``,
  ``gen_ai.usage.input_tokens``/``output_tokens``, ``gen_ai.response.finish_reasons``),
  ``execute_tool {name}`` for each tool call, ``orchestra.compaction`` for a summary.
  A step replayed from the journal makes no span: nothing ran.

Without ``tracing`` nothing here is imported or called (one context-variable read per
tool call and summary is the whole cost).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from orchestra._types import Run, Task
from orchestra.models.base import DeltaSink, Model, ModelRequest, ModelResponse, streams

if TYPE_CHECKING:
    from opentelemetry.trace import Span, TracerProvider

    from orchestra.store.protocol import Blackboard

TRACE_EVENT = "trace.span"
_ACTIVE: ContextVar[Tracing | None] = ContextVar("orchestra_tracing", default=None)


def step_span(kind: str, name: str, **attributes: Any) -> contextlib.AbstractContextManager[Any]:
    """A span for one step of the running task, or nothing when tracing is off."""
    tracing = _ACTIVE.get()
    if tracing is None:
        return contextlib.nullcontext()
    return tracing.step(kind, name, attributes)


def step_failed(span: Any, why: str) -> None:
    """Mark a step's span (from :func:`step_span`) failed: a tool whose result is an error."""
    from opentelemetry.trace import Status, StatusCode

    span.set_status(Status(StatusCode.ERROR, why))


class Tracing:
    """Spans for the runs a coordinator drives (see the module docstring)."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        try:
            from opentelemetry import trace
        except ImportError as exc:
            raise ImportError("tracing needs OpenTelemetry: pip install -e '.[otel]' "
                              "(from an orchestra checkout)") from exc
        from orchestra._version import __version__

        self._trace = trace
        self.tracer = trace.get_tracer("orchestra", __version__,
                                       tracer_provider=tracer_provider)
        self._runs: dict[str, Span] = {}

    # -- runs ------------------------------------------------------------------------
    async def run_started(self, store: Blackboard, run: Run) -> None:
        """Open the run's span, linked to those of earlier drives, and record its context."""
        trace = self._trace
        earlier: list[Any] = []
        after = 0
        while True:
            batch = await store.events(run.id, starting_after=after, limit=500)
            earlier += [e.data for e in batch if e.kind == TRACE_EVENT]
            if len(batch) < 500:
                break
            after = batch[-1].seq
        links = [trace.Link(trace.SpanContext(int(d["trace_id"], 16), int(d["span_id"], 16),
                                              is_remote=True,
                                              trace_flags=trace.TraceFlags(trace.TraceFlags
                                                                           .SAMPLED)),
                            {"orchestra.link": "earlier drive of this run"})
                 for d in earlier if isinstance(d, dict)]
        span = self.tracer.start_span(
            "orchestra.run", links=links,
            attributes={"orchestra.run.id": run.id, "orchestra.pipeline": run.pipeline,
                        "orchestra.run.resumed": bool(earlier)})
        self._runs[run.id] = span
        ctx = span.get_span_context()
        if ctx.is_valid:
            await store.append_event(run.id, TRACE_EVENT, {
                "trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x")})

    def run_ended(self, run_id: str, status: str | None, error: BaseException | None) -> None:
        span = self._runs.pop(run_id, None)
        if span is None:
            return
        if status is not None:
            span.set_attribute("orchestra.run.status", status)
        if error is not None:
            span.record_exception(error)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, str(error)))
        span.end()

    # -- tasks and steps -----------------------------------------------------------------
    @contextlib.contextmanager
    def task(self, task: Task, agent_id: str) -> Iterator[None]:
        """The task attempt's span, current (with this tracing active) inside the block."""
        parent = self._runs.get(task.run_id)
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        with self.tracer.start_as_current_span(
                "orchestra.task", context=context, record_exception=True,
                attributes={"orchestra.run.id": task.run_id, "orchestra.task.id": task.id,
                            "orchestra.agent.id": agent_id, "orchestra.role": task.role,
                            "orchestra.task.attempt": task.attempt,
                            "gen_ai.agent.id": agent_id, "gen_ai.agent.name": task.role}):
            token = _ACTIVE.set(self)
            try:
                yield
            finally:
                _ACTIVE.reset(token)

    def step(self, kind: str, name: str,
             attributes: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
        if kind == "tool":
            return self.tracer.start_as_current_span(
                f"execute_tool {name}", record_exception=True,
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                            **attributes})
        return self.tracer.start_as_current_span(f"orchestra.{kind}", attributes=attributes)

    def wrap(self, model: Model) -> Model:
        """``model`` with a span per call (GenAI semantic conventions)."""
        return TracedModel(model, self)


class TracedModel:
    """A model whose every call is a ``chat`` span; everything else is the wrapped model's."""

    def __init__(self, inner: Model, tracing: Tracing) -> None:
        self.inner = inner
        self.name = inner.name
        self._tracing = tracing

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    async def request(self, request: ModelRequest) -> ModelResponse:
        return await self._call(request, None)

    async def request_stream(self, request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        """A streamed call in its span (a model that does not stream: a plain one)."""
        return await self._call(request, sink)

    async def _call(self, request: ModelRequest, sink: DeltaSink | None) -> ModelResponse:
        settings = request.settings
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat",
                                      "gen_ai.request.model": self.name}
        if settings.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = settings.max_tokens
        if settings.temperature is not None:
            attributes["gen_ai.request.temperature"] = settings.temperature
        trace = self._tracing._trace
        with self._tracing.tracer.start_as_current_span(
                f"chat {self.name}", kind=trace.SpanKind.CLIENT, attributes=attributes,
                record_exception=True) as span:
            response = await (self.inner.request_stream(request, sink)
                              if sink is not None and streams(self.inner)
                              else self.inner.request(request))
            span.set_attribute("gen_ai.response.model", response.model or self.name)
            span.set_attribute("gen_ai.usage.input_tokens", response.usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", response.usage.output_tokens)
            span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
            return response
