"""Valid text: strings that encode as UTF-8, whatever a model, a client or a plugin sent.

A Python ``str`` may hold UTF-16 surrogate code points (``"\\ud83d"``), which JSON decoders
produce from ``\\ud83d`` escapes and some providers send. Such a string cannot be encoded as
UTF-8, so saving it, sending it to a model or answering it over HTTP fails. Everything the
store saves passes through :func:`clean_text` or :func:`clean_json` first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes (U+FFFD REPLACEMENT CHARACTER)."""


def clean_text(text: str) -> str:
    """Return ``text`` as valid Unicode: every code point encodable as UTF-8.

    A surrogate pair written as two code units (``"\\ud83d\\ude00"``) becomes the character it
    encodes (``"😀"``); a lone high or low surrogate becomes U+FFFD. Everything else, NULs and
    control characters included, is kept. A valid string is returned as is (one encode).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 with surrogatepass turns every code unit into its 2 bytes; decoding pairs
        # them up again and replaces what has no partner.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


MAX_JSON_DEPTH = 64
"""How deep tool arguments may nest (objects and arrays; ``{}`` is 1 deep): deeper ones are
refused with an error that names the bound, never walked by code that recurses."""

_WALK_LIMIT = 1_000
"""Past this depth :func:`clean_json` stops (a value that deep, or one that holds itself)."""


def json_depth(value: Any, stop: int | None = None) -> int:
    """How deep the objects and arrays of the JSON-shaped ``value`` nest (a scalar is 0 deep,
    ``{}`` and ``[]`` 1), found without recursion, so any depth is measured safely.

    With ``stop``, the walk ends at the first container deeper than ``stop`` and returns its
    depth (``stop + 1``): enough to refuse the value, without reading all of it.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if stop is not None and deepest > stop:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def clean_json(value: Any) -> Any:
    """A copy of the JSON-shaped ``value`` with every string in it (keys too) cleaned.

    Mappings become dicts and lists or tuples become lists, at any depth, so the copy shares
    no container with ``value``; numbers, booleans and ``None`` are kept. Two keys that clean
    to the same string keep the later value. Other objects are returned as they are.

    The walk keeps its own stack (no recursion), so a deeply nested value cannot exhaust
    Python's; past 1,000 levels (deeper than ``json.loads`` goes, or a value holding itself)
    it raises ``ValueError`` instead of walking on.
    """
    stack: list[tuple[Any, Any, int]] = []

    def copy(item: Any, depth: int) -> Any:
        if isinstance(item, str):
            return clean_text(item)
        if not isinstance(item, Mapping | list | tuple):
            return item
        if depth > _WALK_LIMIT:
            raise ValueError(f"a JSON value nests deeper than {_WALK_LIMIT} levels")
        target: Any = {} if isinstance(item, Mapping) else []
        stack.append((item, target, depth))
        return target

    root = copy(value, 1)
    while stack:
        source, target, depth = stack.pop()
        if isinstance(source, Mapping):
            for key, item in source.items():
                target[clean_text(key) if isinstance(key, str) else key] = copy(item, depth + 1)
        else:
            target.extend(copy(item, depth + 1) for item in source)
    return root


class StreamText:
    """Cleans a text that arrives in pieces, as one text would be cleaned.

    A pair of code units split across two pieces (``"\\ud83d"`` then ``"\\ude00"``) is
    one character, not two U+FFFD: a piece ending with a high surrogate keeps it back for
    the next piece. :meth:`flush` gives what is kept back once the text ends.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """The clean text of ``piece`` (with what the last piece kept back), maybe ``""``."""
        text = self._held + piece
        self._held = ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            text, self._held = text[:-1], text[-1]
        return clean_text(text)

    def flush(self) -> str:
        """What is still kept back, cleaned (a lone high surrogate: U+FFFD), or ``""``."""
        held, self._held = self._held, ""
        return clean_text(held)
