"""Error tool results: the one way a failed, refused or declined call is answered.

Every error tool message the oracle sends a model is ``{"error": message}`` (JSON, non-ASCII
kept as it is), flagged ``is_error``. The executor, the gate, the meta-tools, the waits, the
MCP surface and the conformance checks all build one here, so the shape never drifts and a
reader of a saved thread can tell an error by its content alone.
"""

from __future__ import annotations

import json

from oracle_core.values.messages import ToolCall, ToolResult


def error_content(message: str) -> str:
    """The text of an error tool message: ``{"error": message}`` as JSON."""
    return json.dumps({"error": message}, ensure_ascii=False)


def failed_call(
    call_id: str,
    name: str,
    message: str,
    *,
    error: BaseException | None = None,
    refused: bool = False,
) -> ToolResult:
    """The error result answering the call ``call_id`` of tool ``name``.

    For a call known by its id and name only (a saved operation, a call of a thread's
    messages); with a :class:`~oracle_core.values.messages.ToolCall` at hand, use
    :func:`error_result`.

    Args:
        call_id: the id of the call it answers.
        name: the tool name.
        message: what went wrong, worded for the model.
        error: the exception the call failed with, if any (never saved).
        refused: the capability gate refused to run the call.
    """
    content = error_content(message)
    return ToolResult(call_id, name, content, is_error=True, refused=refused, error=error)


def error_result(
    call: ToolCall,
    message: str,
    error: BaseException | None = None,
    *,
    refused: bool = False,
) -> ToolResult:
    """An error tool message for ``call``: ``{"error": message}``.

    Args:
        call: the call it answers.
        message: what went wrong, worded for the model.
        error: the exception the call failed with, if any (never saved).
        refused: the capability gate refused to run the call.
    """
    return failed_call(call.id, call.name, message, error=error, refused=refused)
