"""What content a span may carry: the switch that allows it, and how long a piece may be.

Message and argument content is recorded only when ``ORACLE_TRACE_CONTENT`` is on (off by
default); connection secrets never are (a tool's credential is a
:class:`~oracle_core.authoring.secrets.Secret`, whose text is a mask). One content
attribute holds at most :data:`CONTENT_LIMIT` characters.
"""

from __future__ import annotations

import json
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
