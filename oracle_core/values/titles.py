"""A thread's title: the first words of its first user message, for listings (the chat
page's sidebar, ``GET /threads``, ``oracle threads --json``).

The SQL stores read the message's text in their query, at most
:data:`TITLE_SOURCE_CHARS` of it, joined as :func:`title_source` joins it here, so every
store gives one thread the same title.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

TITLE_CHARS = 60
"""The longest title, in characters (a longer message is cut at a word and ends in ``…``)."""

TITLE_SOURCE_CHARS = 1000
"""How much of the first user message's text a title is made from."""

_BLANKS = re.compile(r"[\s\x00-\x1f\x7f]+")


def title_source(content: Any) -> str:
    """The text of a message's ``content`` a title is made from: a string as it is; of a
    list of parts, each text part's text and ``[image]`` for each image, joined by spaces;
    at most :data:`TITLE_SOURCE_CHARS` characters."""
    if isinstance(content, list):
        pieces = []
        for part in content:
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind == "text":
                pieces.append(str(part.get("text") or ""))
            elif kind == "image_url":
                pieces.append("[image]")
        content = " ".join(pieces)
    return content[:TITLE_SOURCE_CHARS] if isinstance(content, str) else ""


def thread_title(source: str) -> str:
    """The title made from ``source`` (:func:`title_source`): white space and control
    characters folded to single spaces, at most :data:`TITLE_CHARS` characters; ``""``
    for none."""
    text = _BLANKS.sub(" ", source).strip()
    if len(text) <= TITLE_CHARS:
        return text
    cut = text[: TITLE_CHARS - 1]
    if " " in cut[TITLE_CHARS // 2 :]:  # end at a word, unless that loses half the title
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,.;:-") + "…"


def first_user_title(messages: Iterable[Mapping[str, Any]]) -> str:
    """The title of a thread of ``messages``: that of its first user message, else ``""``."""
    content = next((m.get("content") for m in messages if m.get("role") == "user"), "")
    return thread_title(title_source(content))
