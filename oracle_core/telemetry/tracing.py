"""OpenTelemetry traces of runs, in the GenAI semantic conventions (docs/observability.md).

:class:`TracingObserver` builds spans from a run's events (:mod:`oracle_core.values.events`)
as the run yields them, with explicit start and end times and explicit parents, so it never
touches the run loop nor the context the run is iterated in:

- ``invoke_agent oracle`` for each run (each *segment* of it: a run that waited for a person
  and was resumed, maybe in another process, is a second segment with the same run id);
- ``chat {model}`` for each model call, from ``model_call`` to its ``usage``;
- ``execute_tool {tool}`` for each tool call, from ``tool_call`` to ``tool_result`` (the
  meta-tools' spans also carry what was searched, found and loaded);
- ``wait {kind}`` for each wait a run stops on, and ``resume {kind}`` for the decision a
  resumed run answers.

The attribute names follow the OpenTelemetry semantic conventions for generative AI, version
1.37 (``gen_ai.provider.name``, ``gen_ai.input.messages``, ...); oracle-specific facts are
under ``oracle.*``.

The run span's parent is the OpenTelemetry context current when the run starts (an
incoming ``traceparent`` the server extracted, or the span of an embedding application)
when it holds a valid span. Otherwise it is a *run anchor*: a remote span context whose
trace id and span id are derived from the run id alone (:func:`run_anchor`), so every segment
of a run, in whatever process, is in the same trace without anything being saved. A segment
with a parent of its own links to the anchor, and a resumed segment links to the span of the
segment that waited when this oracle saw it.

Nothing is done without an SDK: while no tracer provider is configured (the API's proxy or
no-op provider) a run costs one type check at its start and one dict lookup per event.
Message and argument content is recorded only when ``content`` is on
(``ORACLE_TRACE_CONTENT=1``), and so is an error's text: with content off a failed run's
status is its error's type and a fixed reason (see
:mod:`~oracle_core.telemetry.span_content`); connection secrets never are (a tool's credential is a
:class:`~oracle_core.authoring.secrets.Secret`, whose text is a mask).

This module holds the observer, its runs and its model calls; the rest is beside it, one
concept a module: :mod:`~oracle_core.telemetry.semconv` (the conventions' names and
shapes), :mod:`~oracle_core.telemetry.span_content` (what content a span may carry),
:mod:`~oracle_core.telemetry.run_anchor`, :mod:`~oracle_core.telemetry.segment` (what is
kept of a run segment between events), :mod:`~oracle_core.telemetry.tool_spans` and
:mod:`~oracle_core.telemetry.wait_spans`. Their public names are importable from here too.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    NoOpTracerProvider,
    ProxyTracerProvider,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TracerProvider,
)

from oracle_core.capabilities.meta_tools.finding import SEARCH as _SEARCH_TOOL
from oracle_core.capabilities.meta_tools.listing import LIST as _LIST_TOOL
from oracle_core.capabilities.meta_tools.loading import LOAD as _LOAD_TOOL
from oracle_core.capabilities.meta_tools.operation import OPERATION as _OPERATION_TOOL
from oracle_core.telemetry.run_anchor import run_anchor
from oracle_core.telemetry.segment import ModelCall, Segment
from oracle_core.telemetry.semconv import (
    REQUEST_PARAMETERS,
    SCHEMA_URL,
    SEMCONV_VERSION,
    model_parts,
    semconv_message,
)
from oracle_core.telemetry.span_content import (
    CONTENT_LIMIT,
    CONTENT_VARIABLE,
    as_json,
    content_wanted,
    failure,
)
from oracle_core.telemetry.tool_spans import end_loads, tool_answered, tool_called
from oracle_core.telemetry.wait_spans import operation_updated, waited
from oracle_core.values.events import (
    ApprovalRequested,
    CapabilityLoaded,
    ConnectionRequested,
    ModelCallStarted,
    OperationUpdated,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from oracle_core.version import __version__

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from oracle_core.plugins.registry import Registry
    from oracle_core.run.state import RunState
    from oracle_core.values.events import Event

__all__ = [
    "AGENT_NAME",
    "CONTENT_LIMIT",
    "CONTENT_VARIABLE",
    "GET_OPERATION",
    "LIST",
    "LOAD",
    "NOTE",
    "REQUEST_PARAMETERS",
    "SCHEMA_URL",
    "SEARCH",
    "SEMCONV_VERSION",
    "WAITED_KEPT",
    "TracingObserver",
    "content_wanted",
    "model_parts",
    "run_anchor",
    "semconv_message",
]

AGENT_NAME = "oracle"
"""The default ``gen_ai.agent.name``."""

NOTE = "oracle.tracing"
"""The start of this observer's key in ``RunState.notes`` (each observer adds its id)."""

WAITED_KEPT = 1024
"""Span contexts of waiting segments remembered, for the resumed segment's link."""

# The meta-tools' names, as their definitions give them.
SEARCH = _SEARCH_TOOL.name
LOAD = _LOAD_TOOL.name
LIST = _LIST_TOOL.name
GET_OPERATION = _OPERATION_TOOL.name


def _now() -> int:
    return time.time_ns()


class TracingObserver:
    """A :class:`~oracle_core.run.observe.RunObserver` that turns runs into spans.

    Args:
        tracer_provider: where spans go; ``None``: the global provider, read when each
            run starts (so an application may configure it after building the oracle).
        content: record messages, tool arguments and results (``ORACLE_TRACE_CONTENT``).
        agent_name: ``gen_ai.agent.name``.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        content: bool = False,
        agent_name: str = AGENT_NAME,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.content = content
        self.agent_name = agent_name
        self._tracers: dict[int, Tracer] = {}
        self._waited: OrderedDict[str, SpanContext] = OrderedDict()
        self._note = f"{NOTE}:{id(self)}"  # each observer its own key (an app may add one)
        self._own: Tracer | None = None
        if tracer_provider is not None:
            self._own = tracer_provider.get_tracer(
                "oracle_core", __version__, schema_url=SCHEMA_URL
            )

    def _tracer(self) -> Tracer | None:
        """The tracer of the provider in use, or ``None`` while no SDK is configured."""
        if self._own is not None:
            return self._own
        provider = trace.get_tracer_provider()
        if isinstance(provider, ProxyTracerProvider | NoOpTracerProvider):
            return None
        tracer = self._tracers.get(id(provider))
        if tracer is None:
            tracer = provider.get_tracer("oracle_core", __version__, schema_url=SCHEMA_URL)
            self._tracers = {id(provider): tracer}  # one provider at a time
        return tracer

    # The observer ------------------------------------------------------------------------

    def observe(self, registry: Registry, state: RunState, event: Event) -> None:
        """Turn ``event`` of the run ``state`` into spans (see the module's docs)."""
        if isinstance(event, TextDelta):
            return
        if isinstance(event, RunStarted):
            self._started(state)
            return
        run: Segment | None = state.notes.get(self._note)
        if run is None:
            return
        now = _now()
        if run.model_done is not None:
            self._end_model(run, "tool_calls" if isinstance(event, ToolCallEvent) else "stop")
        if run.loads and not isinstance(event, ToolResultEvent | CapabilityLoaded):
            end_loads(run)
        if isinstance(event, ModelCallStarted):
            run.shown.update(event.tools)
            self._model_call(run, state, event, now)
        elif isinstance(event, UsageEvent):
            if run.model is not None:
                attributes = run.model.attributes
                attributes["gen_ai.usage.input_tokens"] = event.usage.prompt_tokens
                attributes["gen_ai.usage.output_tokens"] = event.usage.completion_tokens
                if self.content:
                    self._output_message(attributes, state)
                run.model_done = now
        elif isinstance(event, ToolCallEvent):
            tool_called(run, registry, event, now, self.content)
        elif isinstance(event, ToolResultEvent):
            tool_answered(run, registry, event, now, self.content)
        elif isinstance(event, CapabilityLoaded):
            names = list(event.names)
            for span, _ in run.loads:
                span.set_attribute("oracle.capabilities.loaded", names)
            run.run.add_event("oracle.capability.loaded", {"oracle.capabilities.loaded": names})
            end_loads(run)
        elif isinstance(event, ApprovalRequested | ConnectionRequested):
            waited(run, event.operation, now)
        elif isinstance(event, OperationUpdated):
            operation_updated(run, event.operation, now, self.content)
        elif isinstance(event, RunFinished):
            self._finished(run, state, event, now)
            del state.notes[self._note]

    # Runs --------------------------------------------------------------------------------

    def _started(self, state: RunState) -> None:
        tracer = self._tracer()
        if tracer is None:
            return
        run_id = state.record.id
        anchor = run_anchor(run_id)
        ambient = otel_context.get_current()
        links: list[Link] = []
        if trace.get_current_span(ambient).get_span_context().is_valid:
            parent = ambient
            links.append(Link(anchor, {"oracle.link": "run"}))
        else:
            parent = trace.set_span_in_context(NonRecordingSpan(anchor))
        resumed = not state.message and state.record.steps > 0
        waited = self._waited.pop(run_id, None)
        if waited is not None:
            links.append(Link(waited, {"oracle.link": "resumed_from"}))
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.agent_name,
            "gen_ai.conversation.id": state.thread_id,
            "oracle.run.id": run_id,
        }
        if resumed:
            attributes["oracle.run.resumed"] = True
        if self.content and state.message:
            attributes["gen_ai.input.messages"] = as_json(
                [{"role": "user", "parts": [{"type": "text", "content": state.message}]}]
            )
        span = tracer.start_span(
            f"invoke_agent {self.agent_name}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
        )
        if not span.is_recording():  # sampled out: nothing more of this run
            span.end()
            return
        state.notes[self._note] = Segment(span, trace.set_span_in_context(span), tracer=tracer)

    def _finished(self, run: Segment, state: RunState, event: RunFinished, now: int) -> None:
        failed = event.status == "failed"
        error = failure(state.error_type, event.error, self.content)  # no content unless on
        if run.model is not None:  # the model call never answered
            run.model.attributes["error.type"] = "model_call_failed" if failed else event.status
            self._emit(run, run.model, now, Status(StatusCode.ERROR, error) if failed else None)
            run.model = None
        end_loads(run)
        for call_id, span in run.tools.items():
            span.set_attribute("oracle.tool.outcome", "unfinished")
            span.set_attribute("error.type", event.status)
            span.end(end_time=now)
            run.tool_names.pop(call_id, None)
        run.tools.clear()
        for span in run.waits:
            span.end(end_time=now)
        span = run.run
        span.set_attributes(
            {
                "oracle.run.status": event.status,
                "gen_ai.usage.input_tokens": event.usage.prompt_tokens,
                "gen_ai.usage.output_tokens": event.usage.completion_tokens,
            }
        )
        if event.operations:
            span.set_attribute(
                "oracle.operation.ids", [str(o.get("id", "")) for o in event.operations]
            )
        if self.content and event.answer:
            span.set_attribute(
                "gen_ai.output.messages",
                as_json(
                    [{"role": "assistant", "parts": [{"type": "text", "content": event.answer}]}]
                ),
            )
        if failed:
            span.set_attribute("error.type", "run_failed")
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=now)
        if event.status.startswith("waiting_for_") and event.status != "waiting_for_client":
            self._waited[event.run_id] = span.get_span_context()
            self._waited.move_to_end(event.run_id)
            while len(self._waited) > WAITED_KEPT:
                self._waited.popitem(last=False)

    # Model calls -------------------------------------------------------------------------

    def _model_call(self, run: Segment, state: RunState, event: ModelCallStarted, now: int) -> None:
        if run.model is not None:  # a call without usage before the next (never expected)
            self._emit(run, run.model, now)
        provider, model = model_parts(state.record.model)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "oracle.step": event.step,
        }
        if "total" in event.tokens:  # the oracle's own count of the prompt, before the call
            attributes["oracle.prompt.tokens"] = event.tokens["total"]
        for option, value in state.options.model_options.items():
            name = REQUEST_PARAMETERS.get(option)
            if name is None:
                continue
            if isinstance(value, bool | int | float | str):
                attributes[name] = [value] if name.endswith("sequences") else value
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                attributes[name] = value
        if self.content:
            attributes["gen_ai.input.messages"] = as_json(
                [semconv_message(m) for m in state.messages]
            )
        run.model = ModelCall(f"chat {model}", attributes, now)

    def _output_message(self, attributes: dict[str, Any], state: RunState) -> None:
        last = state.messages[-1] if state.messages else None
        if last is not None and last.get("role") == "assistant":
            attributes["gen_ai.output.messages"] = as_json([semconv_message(last)])

    def _end_model(self, run: Segment, reason: str) -> None:
        assert run.model is not None and run.model_done is not None
        run.model.attributes["gen_ai.response.finish_reasons"] = [reason]
        self._emit(run, run.model, run.model_done)
        run.model, run.model_done = None, None

    def _emit(self, run: Segment, call: ModelCall, end: int, status: Status | None = None) -> None:
        """The span of the model call ``call``, started and ended at once."""
        span = run.tracer_of().start_span(
            call.name,
            context=run.context,
            kind=SpanKind.CLIENT,
            attributes=call.attributes,
            start_time=call.start,
        )
        if status is not None:
            span.set_status(status)
        span.end(end_time=end)

    # Tool calls --------------------------------------------------------------------------

    # Waits -------------------------------------------------------------------------------
