"""What every meta-tool result shares: the token budget, and how names and errors read.

Every meta-tool result is bounded (at most :data:`RESULT_TOKEN_BUDGET` tokens) whatever
the size of the catalog, so the listing, loading and search results check their text here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from oracle_core.plugins.registry import Plugin
from oracle_core.values.tokens import count_tokens

RESULT_TOKEN_BUDGET = 2000
"""Tokens a meta-tool result may cost at most, whatever the size of the catalog."""

_SUMMARY_CHARS = 120


def dumps(value: Any) -> str:
    """``value`` as compact JSON, non-ASCII kept (what the model reads)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def short(text: str, limit: int = _SUMMARY_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def about(plugin: Plugin, loaded: Sequence[str]) -> dict[str, Any]:
    """What every listing of ``plugin`` shows: name, summary, visibility, whether loaded."""
    return {
        "name": plugin.name,
        "summary": short(plugin.manifest.summary),
        "visibility": plugin.visibility,
        "loaded": plugin.visibility == "always" or plugin.name in loaded,
    }


def fits(text: str) -> bool:
    """Whether ``text`` is within :data:`RESULT_TOKEN_BUDGET` tokens."""
    # A token is at least one byte, so short texts need no counting.
    return len(text.encode()) <= RESULT_TOKEN_BUDGET or count_tokens(text) <= RESULT_TOKEN_BUDGET


def echo(name: str) -> str:
    """A name the model sent, quoted for a message and cut to 64 characters."""
    return repr(name if len(name) <= 64 else f"{name[:64]}...")


def error(message: str) -> str:
    """An error result's text: ``{"error": message}``."""
    return dumps({"error": message})
