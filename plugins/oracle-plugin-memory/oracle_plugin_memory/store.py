"""Where memories live: tables prefixed ``memory_`` in the oracle's own SQLite file.

Every read and write names the user, so one user's memories are never seen, searched or
forgotten on another user's behalf. Text search uses an FTS5 index kept in step with the
memories by triggers, with the Porter stemmer so "prefer" finds "prefers".
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from oracle_core import SQLiteStore
from oracle_plugin_memory.fts import fts_query

# AUTOINCREMENT: an id is never reused, so a model that remembers the id of a forgotten
# memory cannot forget a newer one by mistake.
SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_items (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    text TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    thread_id TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_items_by_user ON memory_items (user_id, id);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
    text, tags, content='memory_items', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS memory_items_indexed AFTER INSERT ON memory_items BEGIN
    INSERT INTO memory_fts (rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS memory_items_unindexed AFTER DELETE ON memory_items BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, text, tags)
    VALUES ('delete', old.id, old.text, old.tags);
END;
"""

KEY_TAG = "key:"
"""The tag prefix that marks what a keyed fact is about (``key:favourite colour``)."""

_COLUMNS = "memory_items.id, memory_items.text, memory_items.tags, memory_items.created_at"


@dataclass(frozen=True)
class Memory:
    """One saved memory.

    Attributes:
        id: its number, unique in the database and never reused.
        text: the fact as it was saved.
        tags: topic words saved with it (lower case).
        created_at: when it was saved (seconds since the epoch).
    """

    id: int
    text: str
    tags: tuple[str, ...]
    created_at: float

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Memory:
        """Build a memory from a row of ``id, text, tags, created_at``."""
        return cls(int(row[0]), str(row[1]), tuple(json.loads(row[2])), float(row[3]))

    def as_dict(self) -> dict[str, Any]:
        """The memory as the tools report it (tags only when there are some)."""
        saved = datetime.fromtimestamp(self.created_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        data: dict[str, Any] = {"id": self.id, "text": self.text, "saved_at": saved}
        if self.tags:
            data["tags"] = list(self.tags)
        return data


def normalize_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """Tags stripped, lower-cased and without blanks or repeats, in order."""
    return tuple(dict.fromkeys(t.strip().lower() for t in tags if t.strip()))


class MemoryStore(SQLiteStore):
    """The memories of every user of one oracle, in the oracle's SQLite file.

    The connection opens on first use (creating the tables if needed) and is shared by the
    tools' worker threads under a lock; :meth:`close` closes it, and a later use opens it
    again. Other processes may use the same file: SQLite's WAL mode lets them read while
    one writes, and a writer waits up to ``busy_timeout`` seconds for another's lock.

    Args:
        path: the SQLite file (``$ORACLE_HOME/oracle.db``); created with its folder if missing.
        busy_timeout: seconds to wait for another connection's write lock.
    """

    schema = SCHEMA

    def save(
        self,
        user_id: str,
        text: str,
        tags: Sequence[str] = (),
        thread_id: str | None = None,
        *,
        key: str | None = None,
    ) -> tuple[Memory, bool]:
        """Save ``text`` for ``user_id``, unless that user already saved the very same text.

        Args:
            user_id: whose memory it is.
            text: the fact.
            tags: topic words.
            thread_id: the thread it was learnt in.
            key: what the fact is about (``"favourite colour"``): the user's other
                memories with the same key are replaced (deleted) in the same transaction,
                so "my favourite colour is blue" supersedes "... is green".

        Returns:
            The memory, and whether it is new (``False``: the existing one is returned).
        """
        if key is not None:
            tags = (*tags, f"{KEY_TAG}{key}")
        tag_list = json.dumps(list(normalize_tags(tags)), ensure_ascii=False)
        with self.lock:
            db = self.connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                if key is not None:
                    db.execute(
                        "DELETE FROM memory_items WHERE user_id = ? AND text != ? AND EXISTS "
                        "(SELECT 1 FROM json_each(memory_items.tags) WHERE value = ?)",
                        (user_id, text, f"{KEY_TAG}{key}".lower()),
                    ).fetchall()
                row = db.execute(
                    f"SELECT {_COLUMNS} FROM memory_items WHERE user_id = ? AND text = ?",
                    (user_id, text),
                ).fetchone()
                if row is None:
                    cursor = db.execute(
                        "INSERT INTO memory_items (user_id, text, tags, thread_id, created_at) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (user_id, text, tag_list, thread_id, time.time()),
                    )
                    row = db.execute(
                        f"SELECT {_COLUMNS} FROM memory_items WHERE id = ?", (cursor.lastrowid,)
                    ).fetchone()
                    created = True
                else:
                    created = False
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return Memory.from_row(row), created

    def search(self, user_id: str, query: str, limit: int) -> list[Memory]:
        """The memories of ``user_id`` matching any word of ``query``, best first."""
        expression = fts_query(query)
        if expression is None:
            return []
        with self.lock:
            rows = (
                self.connection()
                .execute(
                    f"SELECT {_COLUMNS} FROM memory_fts "
                    "JOIN memory_items ON memory_items.id = memory_fts.rowid "
                    "WHERE memory_fts MATCH ? AND memory_items.user_id = ? "
                    "ORDER BY memory_fts.rank, memory_items.id DESC LIMIT ?",
                    (expression, user_id, limit),
                )
                .fetchall()
            )
        return [Memory.from_row(r) for r in rows]

    def recent(self, user_id: str, limit: int) -> list[Memory]:
        """The latest ``limit`` memories of ``user_id``, newest first."""
        with self.lock:
            rows = (
                self.connection()
                .execute(
                    f"SELECT {_COLUMNS} FROM memory_items WHERE user_id = ? "
                    "ORDER BY id DESC LIMIT ?",
                    (user_id, limit),
                )
                .fetchall()
            )
        return [Memory.from_row(r) for r in rows]

    def count(self, user_id: str) -> int:
        """How many memories ``user_id`` has."""
        with self.lock:
            (total,) = (
                self.connection()
                .execute("SELECT count(*) FROM memory_items WHERE user_id = ?", (user_id,))
                .fetchone()
            )
        return int(total)

    def forget(self, user_id: str, memory_id: int) -> Memory | None:
        """Delete memory ``memory_id`` if it belongs to ``user_id``.

        Returns:
            The deleted memory, or ``None`` when ``user_id`` has no memory with that id
            (whether it does not exist or belongs to someone else).
        """
        with self.lock:
            # fetchall, not fetchone: the statement must finish, or it keeps the write lock.
            rows = (
                self.connection()
                .execute(
                    "DELETE FROM memory_items WHERE id = ? AND user_id = ? "
                    "RETURNING id, text, tags, created_at",
                    (memory_id, user_id),
                )
                .fetchall()
            )
        return Memory.from_row(rows[0]) if rows else None
