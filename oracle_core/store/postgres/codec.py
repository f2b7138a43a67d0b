"""How the Postgres store spells Python strings in columns, losslessly.

Postgres ``text`` cannot hold U+0000 and a btree index entry cannot exceed about 2.7 kB,
yet a thread id may be any string the embedded store accepts (NULs, astral characters,
megabytes). So a thread is keyed by the SHA-256 of its cleaned id (``bytea``, 32 bytes) and
its id is kept beside it for listing, escaped: ``\\`` becomes ``\\\\`` and U+0000 becomes
``\\0``; every other string is stored as it is. JSON columns hold ``json.dumps`` text
(:func:`~oracle_core.store.saving.to_json`), in which a NUL is already the escape ``\\u0000``.
"""

from __future__ import annotations

import hashlib
import re

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
