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


def clean_json(value: Any) -> Any:
    """A copy of the JSON-shaped ``value`` with every string in it (keys too) cleaned.

    Mappings become dicts and lists or tuples become lists, at any depth, so the copy shares
    no container with ``value``; numbers, booleans and ``None`` are kept. Two keys that clean
    to the same string keep the later value. Other objects are returned as they are.
    """
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {clean_text(k) if isinstance(k, str) else k: clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    return value


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
