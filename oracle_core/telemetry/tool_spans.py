"""The ``execute_tool {tool}`` spans: one for each tool call, from its call to its result.

The meta-tools' spans name the core (``oracle``) as their plugin and carry what was
searched, found and loaded: a search span its number of queries and the names of its
candidates, a load span the names asked for and, once the load is seen, those loaded (so a
load span ends at the ``capability_loaded`` event that follows its result).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry.trace import SpanKind, Status, StatusCode

from oracle_core.capabilities.meta_tools import META_TOOL_DEFINITIONS
from oracle_core.capabilities.meta_tools.finding import SEARCH
from oracle_core.capabilities.meta_tools.loading import LOAD
from oracle_core.telemetry.span_content import capped, parsed

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from oracle_core.plugins.registry import Registry
    from oracle_core.telemetry.segment import Segment
    from oracle_core.values.events import ToolCallEvent, ToolResultEvent

_META_TOOL_NAMES = frozenset(d.name for d in META_TOOL_DEFINITIONS)
_SEARCH, _LOAD = SEARCH.name, LOAD.name

CORE_PLUGIN_NAME = "oracle"
"""The ``oracle.plugin.name`` of a meta-tool's span (the meta-tools belong to no plugin)."""


def tool_called(
    run: Segment, registry: Registry, event: ToolCallEvent, now: int, content: bool
) -> None:
    """Open the span of the call ``event`` (with its arguments when ``content`` is on)."""
    run.tools[event.id] = tool_span(run, registry, event.id, event.name, now, content)
    span = run.tools[event.id]
    arguments = parsed(event.arguments) if event.name in (_SEARCH, _LOAD) else None
    if isinstance(arguments, dict):
        if event.name == _SEARCH and isinstance(arguments.get("queries"), list):
            span.set_attribute("oracle.capabilities.queries", len(arguments["queries"]))
        if event.name == _LOAD and isinstance(arguments.get("names"), list):
            asked = [
                n
                for n in arguments["names"]
                if isinstance(n, str) and (content or n in registry.plugins)
            ]
            span.set_attribute("oracle.capabilities.requested", asked[:64])
    if content:
        span.set_attribute("gen_ai.tool.call.arguments", capped(event.arguments))


UNKNOWN_TOOL = "(unknown)"
"""The tool name a span gives a call of a tool the oracle does not know, with content off."""


def shown_name(run: Segment, registry: Registry, name: str, content: bool) -> str:
    """``name`` as a span may carry it: the oracle's own tool names (its plugins', the
    meta-tools', any shown to the model), else :data:`UNKNOWN_TOOL` unless ``content``."""
    known = name in registry.tools or name in _META_TOOL_NAMES or name in run.shown
    return name if known or content else UNKNOWN_TOOL


def tool_span(
    run: Segment, registry: Registry, call_id: str, name: str, now: int, content: bool
) -> Span:
    """A started ``execute_tool`` span of the call ``call_id`` of tool ``name``."""
    bound = registry.tools.get(name)
    shown = shown_name(run, registry, name, content)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": shown,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
    }
    if bound is not None:
        attributes["oracle.plugin.name"] = bound.plugin.name
        description = getattr(bound.tool, "description", None)
        if isinstance(description, str) and description:
            attributes["gen_ai.tool.description"] = description[:256]
    elif name in _META_TOOL_NAMES:
        attributes["oracle.plugin.name"] = CORE_PLUGIN_NAME
    run.tool_names[call_id] = name
    return run.tracer_of().start_span(
        f"execute_tool {shown}",
        context=run.context,
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        start_time=now,
    )


def tool_answered(
    run: Segment, registry: Registry, event: ToolResultEvent, now: int, content: bool
) -> None:
    """End the span of the call ``event`` answers, with its outcome (a load's span ends
    at its ``capability_loaded``: see :func:`end_loads`)."""
    span = run.tools.pop(event.id, None)
    if span is None:  # a resumed run answers the call that waited: its call came before
        span = tool_span(run, registry, event.id, event.name, now, content)
        span.set_attribute("oracle.tool.resumed", True)
    run.tool_names.pop(event.id, None)
    if event.refused:
        outcome = "refused"
        span.add_event(
            "oracle.gate.refused",
            {
                "gen_ai.tool.name": shown_name(run, registry, event.name, content),
                "gen_ai.tool.call.id": event.id,
            },
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
        found = parsed(event.content)
        if isinstance(found, list):
            names: list[str] = []
            for item in found:
                for entry in (item.get("results") or []) if isinstance(item, dict) else []:
                    name = entry.get("name") if isinstance(entry, dict) else None
                    if isinstance(name, str) and name not in names:
                        names.append(name)
            span.set_attribute("oracle.capabilities.candidates", names)
            span.set_attribute("oracle.capabilities.candidates.count", len(names))
    if content:
        span.set_attribute("gen_ai.tool.call.result", capped(event.content))
    if event.name == _LOAD:
        run.loads.append((span, now))  # ended once its capability_loaded is seen
    else:
        span.end(end_time=now)


def end_loads(run: Segment) -> None:
    """End the load spans still open, each at the time of its result."""
    for span, ended in run.loads:
        span.end(end_time=ended)
    run.loads.clear()
