"""What content a span may carry: the switch that allows it, and how long a piece may be.

Message and argument content is recorded only when ``ORACLE_TRACE_CONTENT`` is on (off by
default); connection secrets never are (a tool's credential is a
:class:`~oracle_core.authoring.secrets.Secret`, whose text is a mask). One content
attribute holds at most :data:`CONTENT_LIMIT` characters.

An error's text is content too: a provider's error may echo the prompt, an output check
quotes the model's answer, a tool or a middleware raises with what it was given. With content
off, a failure is described by :func:`failure` as its error's type and a fixed reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

CONTENT_VARIABLE = "ORACLE_TRACE_CONTENT"
"""The setting that puts message and argument content in spans (off by default)."""

CONTENT_LIMIT = 16_384
"""Characters of one content attribute, at most (the rest is cut, with an ellipsis)."""


def capped(text: str) -> str:
    """``text`` cut to :data:`CONTENT_LIMIT` characters, with an ellipsis when cut."""
    return text if len(text) <= CONTENT_LIMIT else text[:CONTENT_LIMIT] + "…"


def as_json(value: Any) -> str:
    """``value`` as JSON (non-ASCII kept, anything else as text), cut like :func:`capped`."""
    return capped(json.dumps(value, ensure_ascii=False, default=str))


def parsed(text: str) -> Any:
    """The JSON value of ``text``, or ``None`` when it is not JSON."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def content_wanted(env: Any) -> bool:
    """Whether ``ORACLE_TRACE_CONTENT`` asks for content in spans (off when unset)."""
    from oracle_core.settings.reading import env_flag

    return env_flag(env, CONTENT_VARIABLE)


REASONS: Mapping[str, str] = MappingProxyType(
    {
        "OutputLimitError": "the answer is past a bound of the output check",
        "OutputValidationError": "the answer does not fit the output schema",
        "OutputSchemaError": "the output schema was refused",
        "EmptyReplyError": "the model sent an empty reply",
        "ModelError": "the model call failed",
        "BudgetExceededError": "a budget is spent",
        "UsageLimitExceeded": "a usage limit of the run was reached",
        "RunLimitError": "a limit of the run was reached",
        "MiddlewareError": "a middleware failed",
        "ToolArgumentsError": "a tool call's arguments were refused",
        "ToolResultsError": "the tool results given were refused",
        "ClientToolError": "a client tool was refused",
        "ToolError": "a tool failed",
        "ThreadBusyError": "the thread is busy",
        "ThreadConflictError": "another writer changed the thread",
        "ThreadWaitingError": "the thread waits on an operation",
        "TimeoutError": "the run ran out of time",
    }
)
"""The fixed reason of a failure by the name of its error's class (or of a base class)."""

FAILED = "the run failed"
"""The reason of a failure whose error's type has none of its own in :data:`REASONS`."""


def failure(error_type: type[BaseException] | None, error: str | None, content: bool) -> str:
    """How a span or a log line describes a failure: ``Type: reason`` with content off
    (``OutputValidationError: the answer does not fit the output schema``), never the
    error's text, which may quote the run's content; ``Type: text`` (capped) with it on."""
    name = error_type.__name__ if error_type is not None else ""
    if content and error:
        return capped(f"{name}: {error}" if name else error)
    if error_type is None:
        return FAILED
    reason = next((REASONS[c.__name__] for c in error_type.__mro__ if c.__name__ in REASONS), None)
    return f"{name}: {reason or FAILED}"
