"""The ``wait {kind}`` and ``resume {kind}`` spans: a run stopping on a wait, and the
decision a resumed run answers.

A wait (an approval, a connection) ends the span of the call that waits and opens a
``wait`` span until the segment ends; a decided operation is a ``resume`` span of no
length, and a background operation's progress is an event on the run's span.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry.trace import SpanKind

from oracle_core.telemetry.span_content import capped

if TYPE_CHECKING:
    from oracle_core.telemetry.segment import Segment


def waited(run: Segment, operation: dict[str, Any], now: int) -> None:
    """The run stops on ``operation``: end its call's span and open a ``wait`` span."""
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
    span = run.tracer_of().start_span(
        f"wait {kind}",
        context=run.context,
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        start_time=now,
    )
    run.waits.append(span)


def operation_updated(run: Segment, operation: dict[str, Any], now: int, content: bool) -> None:
    """``operation`` changed: an event on the run's span while it is open or in the
    background, else a ``resume`` span with the decision (and its reason with ``content``)."""
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
    if content and operation.get("reason"):
        attributes["oracle.operation.reason"] = capped(str(operation["reason"]))
    span = run.tracer_of().start_span(
        f"resume {kind}",
        context=run.context,
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        start_time=now,
    )
    span.end(end_time=now)
    run.run.set_attribute("oracle.operation.decision", status)
