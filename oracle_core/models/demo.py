"""The offline stand-in model, used when no ``ORACLE_MODEL`` is set.

Like pydantic-ai's ``TestModel``, it is a scripted stand-in, not a language model: it walks
the discovery loop the way a real model would, reading only what a real model reads (the
user's message, the tools it is shown, and the tool results), so the whole framework can be
seen working on a machine with no model account and no network:

1. call ``list_capabilities()``;
2. load the capability whose name, summary, tags and guidance share the most words with the
   user's message;
3. call the tool of that capability's best-matching manifest example, with its arguments;
4. answer with what the tool returned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from oracle_core.models.base import Model
from oracle_core.models.estimate import estimated_usage
from oracle_core.models.wire import assistant_message, calls_of, tool_call
from oracle_core.plugins.core_tools import LIST_CAPABILITIES, LOAD_CAPABILITY
from oracle_core.values.attachments import content_text
from oracle_core.values.messages import Message, ModelRequest, ModelResponse

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "the",
        "to",
        "what",
        "with",
        "you",
    ]
)


def words(text: str) -> set[str]:
    """Lowercase content words of ``text`` (stop words dropped)."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def query_words(text: str) -> set[str]:
    """The words of a user's message; numbers and ``%`` also count as "math"."""
    found = words(text)
    if "%" in text or any(w.isdigit() for w in found):
        found.add("math")
    return found


def _overlap(query: set[str], *texts: Any) -> int:
    return len(query & words(" ".join(str(t) for t in texts)))


def _turn(messages: Sequence[Mapping[str, Any]]) -> tuple[str, Sequence[Mapping[str, Any]]]:
    """The last user message and what came after it."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return content_text(messages[index].get("content")), messages[index + 1 :]
    return "", []


_NO_CATALOG = (
    "This surface shows no capability list, and the demo model only follows the manifest "
    "examples it finds there: set ORACLE_MODEL to a real model to use these tools."
)


class DemoModel(Model):
    """A scripted stand-in model that walks the discovery loop offline (see module docs)."""

    name = "demo"

    def __init__(self) -> None:
        self._calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        user, turn = _turn(request.messages)
        reply = self._next(user, turn, {t.name for t in request.tools})
        # No provider counts for the stand-in: the oracle's own count, marked as one.
        return ModelResponse(reply, estimated_usage(request, reply), calls=calls_of(reply))

    def _call(self, name: str, arguments: dict[str, Any]) -> Message:
        self._calls += 1
        return assistant_message(None, [tool_call(name, arguments, f"call_demo_{self._calls}")])

    def _next(self, user: str, turn: Sequence[Mapping[str, Any]], shown: set[str]) -> Message:
        calls = [c.name for m in turn for c in calls_of(m)]
        results = [str(m.get("content") or "") for m in turn if m.get("role") == "tool"]
        if not calls:
            if LIST_CAPABILITIES not in shown:  # a specialist surface: no catalog to walk
                return assistant_message(_NO_CATALOG, None)
            return self._call(LIST_CAPABILITIES, {})
        last, result = calls[-1], results[-1] if results else ""
        query = query_words(user)
        if last == LIST_CAPABILITIES:
            capabilities = json.loads(result)
            scored = [
                (
                    _overlap(query, c["name"], c["summary"], c.get("tags"), c.get("category")),
                    c["name"],
                )
                for c in capabilities
            ]
            best = max(scored, default=(0, ""))
            if best[0] == 0:
                return assistant_message(
                    "None of the installed capabilities fits that request.", None
                )
            return self._call(LOAD_CAPABILITY, {"names": [best[1]]})
        if last == LOAD_CAPABILITY:
            entries = json.loads(result)
            if isinstance(entries, dict):  # an error: nothing was loaded
                return assistant_message(
                    f"I could not load that capability: {entries.get('error')}", None
                )
            examples = [
                e for entry in entries for e in entry.get("examples", []) if e["tool"] in shown
            ]
            if not examples:
                return assistant_message(
                    f"I loaded {entries[0]['name']}, but it has no example I can follow.", None
                )
            example = max(examples, key=lambda e: _overlap(query, e["user"]))
            return self._call(example["tool"], example.get("args", {}))
        return assistant_message(f"{last} returned: {result}", None)
