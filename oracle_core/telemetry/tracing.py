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
(``ORACLE_TRACE_CONTENT=1``); connection secrets never are (a tool's credential is a
:class:`~oracle_core.authoring.secrets.Secret`, whose text is a mask).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from dataclasses import dataclass, field
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
    TraceFlags,
    TracerProvider,
)

from oracle_core.capabilities.meta_tools import META_TOOL_DEFINITIONS
from oracle_core.capabilities.meta_tools.finding import SEARCH
from oracle_core.capabilities.meta_tools.loading import LOAD
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
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

    from oracle_core.plugins.registry import Registry
    from oracle_core.run.state import RunState
    from oracle_core.values.events import Event

SEMCONV_VERSION = "1.37.0"
"""The version of the OpenTelemetry semantic conventions the spans follow."""

SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

CONTENT_VARIABLE = "ORACLE_TRACE_CONTENT"
"""The setting that puts message and argument content in spans (off by default)."""

AGENT_NAME = "oracle"
NOTE = "oracle.tracing"  # this observer's key in RunState.notes
CONTENT_LIMIT = 16_384  # characters of one content attribute, at most
WAITED_KEPT = 1024  # span contexts of waiting segments remembered, for the resumed link

# The meta-tools' spans name the core as their plugin; search and load spans say more.
_META_TOOL_NAMES = frozenset(d.name for d in META_TOOL_DEFINITIONS)
_SEARCH, _LOAD = SEARCH.name, LOAD.name

# Model options that have a gen_ai.request.* attribute.
REQUEST_PARAMETERS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "seed": "gen_ai.request.seed",
    "stop": "gen_ai.request.stop_sequences",
}


def run_anchor(run_id: str) -> SpanContext:
    """The remote span context every segment of run ``run_id`` descends from or links to.

    Its trace id is the first 32 hex digits of the SHA-256 of the run id, its span id the
    next 16: any process computes the same one, so a resumed run needs nothing saved.
    """
    digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()
    return SpanContext(
        trace_id=int(digest[:32], 16) or 1,
        span_id=int(digest[32:48], 16) or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def model_parts(model: str | None) -> tuple[str, str]:
    """The ``gen_ai.provider.name`` and ``gen_ai.request.model`` of a litellm model string
    (``openai/gpt-4o``: ``openai`` and ``gpt-4o``; a name without a provider: ``unknown``)."""
    if not model:
        return "unknown", "unknown"
    head, slash, rest = model.partition("/")
    return (head, rest) if slash and rest else ("unknown", model)


def _capped(text: str) -> str:
    return text if len(text) <= CONTENT_LIMIT else text[:CONTENT_LIMIT] + "…"


def _json(value: Any) -> str:
    return _capped(json.dumps(value, ensure_ascii=False, default=str))


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def semconv_message(message: Any) -> dict[str, Any]:
    """An OpenAI-shaped chat message in the GenAI conventions' form (``role`` and ``parts``)."""
    role = str(message.get("role", "user"))
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    if role == "tool":
        response = {"type": "tool_call_response", "id": message.get("tool_call_id")}
        parts.append({**response, "response": content})
    elif isinstance(content, str) and content:
        parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        for piece in content:
            if isinstance(piece, dict) and piece.get("type") == "text":
                parts.append({"type": "text", "content": piece.get("text", "")})
            else:
                parts.append(
                    {
                        "type": str(piece.get("type", "other"))
                        if isinstance(piece, dict)
                        else "other"
                    }
                )
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return {"role": role, "parts": parts}


def _now() -> int:
    return time.time_ns()


@dataclass
class _Call:
    """A model call in progress: its span is made whole once the call ends (one SDK call)."""

    name: str
    attributes: dict[str, Any]
    start: int


@dataclass
class _Trace:
    """What the observer keeps of one run segment between its events."""

    run: Span
    context: Context
    model: _Call | None = None
    model_done: int | None = None  # when its usage came: ended at the next event
    tools: dict[str, Span] = field(default_factory=dict)
    tool_names: dict[str, str] = field(default_factory=dict)
    loads: list[tuple[Span, int]] = field(default_factory=list)  # loads, ended later
    waits: list[Span] = field(default_factory=list)
    tracer: Tracer | None = None


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
        run: _Trace | None = state.notes.get(self._note)
        if run is None:
            return
        now = _now()
        if run.model_done is not None:
            self._end_model(run, "tool_calls" if isinstance(event, ToolCallEvent) else "stop")
        if run.loads and not isinstance(event, ToolResultEvent | CapabilityLoaded):
            self._end_loads(run)
        if isinstance(event, ModelCallStarted):
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
            self._tool_call(run, registry, event, now)
        elif isinstance(event, ToolResultEvent):
            self._tool_result(run, registry, event, now)
        elif isinstance(event, CapabilityLoaded):
            names = list(event.names)
            for span, _ in run.loads:
                span.set_attribute("oracle.capabilities.loaded", names)
            run.run.add_event("oracle.capability.loaded", {"oracle.capabilities.loaded": names})
            self._end_loads(run)
        elif isinstance(event, ApprovalRequested | ConnectionRequested):
            self._wait(run, registry, event.operation, now)
        elif isinstance(event, OperationUpdated):
            self._operation(run, state, event.operation, now)
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
            attributes["gen_ai.input.messages"] = _json(
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
        state.notes[self._note] = _Trace(span, trace.set_span_in_context(span), tracer=tracer)

    def _finished(self, run: _Trace, state: RunState, event: RunFinished, now: int) -> None:
        failed = event.status == "failed"
        error = event.error or "the run failed"
        if run.model is not None:  # the model call never answered
            run.model.attributes["error.type"] = "model_call_failed" if failed else event.status
            self._emit(run, run.model, now, Status(StatusCode.ERROR, error) if failed else None)
            run.model = None
        self._end_loads(run)
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
                _json(
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

    def _model_call(self, run: _Trace, state: RunState, event: ModelCallStarted, now: int) -> None:
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
            attributes["gen_ai.input.messages"] = _json(
                [semconv_message(m) for m in state.messages]
            )
        run.model = _Call(f"chat {model}", attributes, now)

    def _output_message(self, attributes: dict[str, Any], state: RunState) -> None:
        last = state.messages[-1] if state.messages else None
        if last is not None and last.get("role") == "assistant":
            attributes["gen_ai.output.messages"] = _json([semconv_message(last)])

    def _end_model(self, run: _Trace, reason: str) -> None:
        assert run.model is not None and run.model_done is not None
        run.model.attributes["gen_ai.response.finish_reasons"] = [reason]
        self._emit(run, run.model, run.model_done)
        run.model, run.model_done = None, None

    def _emit(self, run: _Trace, call: _Call, end: int, status: Status | None = None) -> None:
        """The span of the model call ``call``, started and ended at once."""
        span = self._tracer_of(run).start_span(
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

    def _tool_call(self, run: _Trace, registry: Registry, event: ToolCallEvent, now: int) -> None:
        run.tools[event.id] = self._tool_span(run, registry, event.id, event.name, now)
        span = run.tools[event.id]
        arguments = _parsed(event.arguments) if event.name in (_SEARCH, _LOAD) else None
        if isinstance(arguments, dict):
            if event.name == _SEARCH and isinstance(arguments.get("queries"), list):
                span.set_attribute("oracle.capabilities.queries", len(arguments["queries"]))
            if event.name == _LOAD and isinstance(arguments.get("names"), list):
                asked = [n for n in arguments["names"] if isinstance(n, str)]
                span.set_attribute("oracle.capabilities.requested", asked[:64])
        if self.content:
            span.set_attribute("gen_ai.tool.call.arguments", _capped(event.arguments))

    def _tool_span(
        self, run: _Trace, registry: Registry, call_id: str, name: str, now: int
    ) -> Span:
        bound = registry.tools.get(name)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
        if bound is not None:
            attributes["oracle.plugin.name"] = bound.plugin.name
            description = getattr(bound.tool, "description", None)
            if isinstance(description, str) and description:
                attributes["gen_ai.tool.description"] = description[:256]
        elif name in _META_TOOL_NAMES:
            attributes["oracle.plugin.name"] = "oracle"
        run.tool_names[call_id] = name
        return self._tracer_of(run).start_span(
            f"execute_tool {name}",
            context=run.context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=now,
        )

    def _tool_result(
        self, run: _Trace, registry: Registry, event: ToolResultEvent, now: int
    ) -> None:
        span = run.tools.pop(event.id, None)
        if span is None:  # a resumed run answers the call that waited: its call came before
            span = self._tool_span(run, registry, event.id, event.name, now)
            span.set_attribute("oracle.tool.resumed", True)
        run.tool_names.pop(event.id, None)
        if event.refused:
            outcome = "refused"
            span.add_event(
                "oracle.gate.refused",
                {"gen_ai.tool.name": event.name, "gen_ai.tool.call.id": event.id},
                timestamp=now,
            )
        elif event.is_error:
            outcome = "error"
        else:
            outcome = "ok"
        span.set_attribute("oracle.tool.outcome", outcome)
        if event.is_error:
            span.set_attribute("error.type", "refused" if event.refused else "tool_error")
            span.set_status(Status(StatusCode.ERROR))
        if event.name == _SEARCH and not event.is_error:
            found = _parsed(event.content)
            if isinstance(found, list):
                names: list[str] = []
                for item in found:
                    for entry in (item.get("results") or []) if isinstance(item, dict) else []:
                        name = entry.get("name") if isinstance(entry, dict) else None
                        if isinstance(name, str) and name not in names:
                            names.append(name)
                span.set_attribute("oracle.capabilities.candidates", names)
                span.set_attribute("oracle.capabilities.candidates.count", len(names))
        if self.content:
            span.set_attribute("gen_ai.tool.call.result", _capped(event.content))
        if event.name == _LOAD:
            run.loads.append((span, now))  # ended once its capability_loaded is seen
        else:
            span.end(end_time=now)

    def _end_loads(self, run: _Trace) -> None:
        for span, ended in run.loads:
            span.end(end_time=ended)
        run.loads.clear()

    # Waits -------------------------------------------------------------------------------

    def _wait(self, run: _Trace, registry: Registry, operation: dict[str, Any], now: int) -> None:
        kind = str(operation.get("kind", ""))
        call_id = str(operation.get("call_id", ""))
        attributes: dict[str, Any] = {
            "oracle.operation.id": str(operation.get("id", "")),
            "oracle.operation.kind": kind,
            "gen_ai.tool.name": str(operation.get("tool", "")),
            "gen_ai.tool.call.id": call_id,
            "oracle.plugin.name": str(operation.get("plugin", "")),
        }
        details = operation.get("details") or {}
        if kind == "connection" and isinstance(details, dict) and details.get("connection"):
            attributes["oracle.connection.name"] = str(details["connection"])
        tool = run.tools.pop(call_id, None)
        if tool is not None:  # the call stops here: it waits
            tool.set_attribute("oracle.tool.outcome", f"waiting_for_{kind}")
            tool.set_attribute("oracle.operation.id", attributes["oracle.operation.id"])
            tool.add_event("oracle.wait", {"oracle.operation.kind": kind}, timestamp=now)
            tool.end(end_time=now)
            run.tool_names.pop(call_id, None)
        span = self._tracer_of(run).start_span(
            f"wait {kind}",
            context=run.context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=now,
        )
        run.waits.append(span)

    def _operation(self, run: _Trace, state: RunState, operation: dict[str, Any], now: int) -> None:
        kind = str(operation.get("kind", ""))
        status = str(operation.get("status", ""))
        ident = str(operation.get("id", ""))
        if kind == "background" or status in ("pending", "running"):
            run.run.add_event(
                "oracle.operation.updated",
                {
                    "oracle.operation.id": ident,
                    "oracle.operation.kind": kind,
                    "oracle.operation.status": status,
                },
                timestamp=now,
            )
            return
        attributes: dict[str, Any] = {
            "oracle.operation.id": ident,
            "oracle.operation.kind": kind,
            "oracle.operation.decision": status,
            "gen_ai.tool.name": str(operation.get("tool", "")),
            "gen_ai.tool.call.id": str(operation.get("call_id", "")),
        }
        if self.content and operation.get("reason"):
            attributes["oracle.operation.reason"] = _capped(str(operation["reason"]))
        span = self._tracer_of(run).start_span(
            f"resume {kind}",
            context=run.context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=now,
        )
        span.end(end_time=now)
        run.run.set_attribute("oracle.operation.decision", status)

    def _tracer_of(self, run: _Trace) -> Tracer:
        assert run.tracer is not None
        return run.tracer


def content_wanted(env: Any) -> bool:
    """Whether ``ORACLE_TRACE_CONTENT`` asks for content in spans (off when unset)."""
    from oracle_core.settings.reading import env_flag

    return env_flag(env, CONTENT_VARIABLE)
