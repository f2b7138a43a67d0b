"""How the Postgres store spells Python strings in columns, losslessly.

Postgres ``text`` cannot hold U+0000 and a btree index entry cannot exceed about 2.7 kB,
yet a thread id may be any string the embedded store accepts (NULs, astral characters,
megabytes). So a thread is keyed by the SHA-256 of its cleaned id (``bytea``, 32 bytes) and
its id is kept beside it for listing, escaped: ``\\`` becomes ``\\\\`` and U+0000 becomes
``\\0``; every other string is stored as it is. JSON columns hold ``json.dumps`` text, in
which a NUL is already the escape ``\\u0000``.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from oracle_core.text import clean_text

_ESCAPED = re.compile(r"\\(\\|0)")


def thread_key(thread_id: str) -> bytes:
    """The 32-byte key of a (cleaned) thread id."""
    return hashlib.sha256(thread_id.encode("utf-8")).digest()


def escape(text: str) -> str:
    """``text`` as a Postgres ``text`` value (NUL-free), reversible by :func:`unescape`."""
    if "\\" not in text and "\x00" not in text:
        return text
    return text.replace("\\", "\\\\").replace("\x00", "\\0")


def unescape(stored: str) -> str:
    """The string :func:`escape` stored as ``stored``."""
    if "\\" not in stored:
        return stored
    return _ESCAPED.sub(lambda m: "\\" if m.group(1) == "\\" else "\x00", stored)


def to_json(value: Any) -> tuple[str, Any]:
    """``value`` as JSON text with every string cleaned (keys too), and the clean value.

    With ``ensure_ascii=False`` a surrogate stays raw and each string's code units stay
    adjacent, so cleaning the JSON text cleans every string exactly as ``clean_json`` would;
    control characters, NUL included, are escaped by ``json.dumps``.
    """
    raw = json.dumps(value, ensure_ascii=False)
    text = clean_text(raw)
    return text, (value if text is raw else json.loads(text))
