"""Turning what the model or a user typed into a safe SQLite FTS5 query.

FTS5 gives meaning to quotes, ``*``, ``^``, ``:``, ``-``, parentheses and the words ``AND``,
``OR``, ``NOT`` and ``NEAR``; passed through as is, ordinary text such as ``don't`` or
``C++ (again)`` is a syntax error. So the text is split into words and every word becomes a
quoted string, which FTS5 reads literally, whatever it contains.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing

MAX_TERMS = 32
"""Words of a query that are searched; the rest are ignored (keeps a query cheap)."""

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The distinct words of ``text``, lower-cased, in order, at most :data:`MAX_TERMS`."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))[:MAX_TERMS]


def fts_query(text: str) -> str | None:
    """An FTS5 ``MATCH`` expression that finds rows containing any word of ``text``.

    Matching any word (rather than all) suits recall: "what units do I like" should find
    "prefers metric units"; FTS5's bm25 ranking puts rows matching more, rarer words first.

    Returns:
        The expression, or ``None`` when ``text`` has no words to search for.
    """
    terms = words(text)
    if not terms:
        return None
    # A word never holds a double quote, but doubling them keeps the quoting safe regardless.
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def fts5_missing() -> str | None:
    """Why this Python's SQLite cannot serve the plugin, or ``None`` when it has FTS5."""
    try:
        with closing(sqlite3.connect(":memory:")) as db:
            db.execute("CREATE VIRTUAL TABLE probe USING fts5(text)")
    except sqlite3.OperationalError as error:
        return (
            f"this Python's SQLite ({sqlite3.sqlite_version}) has no FTS5 ({error}); "
            "use a Python built with FTS5 (python.org and most Linux builds are)"
        )
    return None
