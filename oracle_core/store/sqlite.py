"""The embedded default checkpointer: one SQLite file (stdlib ``sqlite3``, WAL mode)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from oracle_core.run.messages import Message
from oracle_core.store.base import Checkpointer
from oracle_core.store.memory import conflict
from oracle_core.store.plugin_store import connect_sqlite
from oracle_core.store.state import RunRecord, ThreadState

SCHEMA = """
CREATE TABLE IF NOT EXISTS oracle_threads (
    thread_id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS oracle_messages (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
CREATE TABLE IF NOT EXISTS oracle_loaded_plugins (
    thread_id TEXT NOT NULL,
    plugin TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (thread_id, plugin)
);
CREATE TABLE IF NOT EXISTS oracle_runs (
    run_id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS oracle_runs_by_thread ON oracle_runs (thread_id, created_at);
"""


class SQLiteCheckpointer(Checkpointer):
    """Stores threads in a SQLite file; several processes may share it.

    Each step is one ``BEGIN IMMEDIATE`` transaction, so a crash leaves either the whole step
    or none of it, and writers from other processes queue on SQLite's lock (up to
    ``busy_timeout`` seconds). Calls are short and made inline: a step costs well under a
    millisecond on a local disk.

    Args:
        path: the database file (created with its folder if missing).
        busy_timeout: seconds to wait for another process's write lock.
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = connect_sqlite(
            self.path, schema=SCHEMA, busy_timeout=busy_timeout
        )

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection (for plugins that keep their own tables in the same file)."""
        if self._db is None:
            raise RuntimeError(f"{self.path} is closed")
        return self._db

    async def load(self, thread_id: str) -> ThreadState:
        with self._lock:
            db = self.connection
            rows = db.execute(
                "SELECT message FROM oracle_messages WHERE thread_id = ? ORDER BY seq", (thread_id,)
            ).fetchall()
            loaded = db.execute(
                "SELECT plugin FROM oracle_loaded_plugins WHERE thread_id = ? ORDER BY seq",
                (thread_id,),
            ).fetchall()
            runs = db.execute(
                "SELECT record FROM oracle_runs WHERE thread_id = ? ORDER BY created_at, rowid",
                (thread_id,),
            ).fetchall()
        return ThreadState(
            thread_id,
            messages=[json.loads(r[0]) for r in rows],
            loaded_plugins=[r[0] for r in loaded],
            runs=[RunRecord.from_json(json.loads(r[0])) for r in runs],
        )

    async def append(
        self,
        thread_id: str,
        *,
        base: int,
        messages: Sequence[Message] = (),
        loaded: Sequence[str] = (),
        run: RunRecord | None = None,
    ) -> list[str]:
        now = time.time()
        with self._lock:
            db = self.connection
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(
                    "INSERT INTO oracle_threads VALUES (?, ?, ?) "
                    "ON CONFLICT (thread_id) DO UPDATE SET updated_at = excluded.updated_at",
                    (thread_id, now, now),
                )
                if messages:
                    (count,) = db.execute(
                        "SELECT count(*) FROM oracle_messages WHERE thread_id = ?", (thread_id,)
                    ).fetchone()
                    if count != base:
                        raise conflict(thread_id, base, count)
                    db.executemany(
                        "INSERT INTO oracle_messages VALUES (?, ?, ?)",
                        [(thread_id, base + i, json.dumps(m)) for i, m in enumerate(messages)],
                    )
                for plugin in loaded:
                    db.execute(
                        "INSERT OR IGNORE INTO oracle_loaded_plugins SELECT ?, ?, "
                        "coalesce(max(seq), -1) + 1 FROM oracle_loaded_plugins WHERE thread_id = ?",
                        (thread_id, plugin, thread_id),
                    )
                if run is not None:
                    db.execute(
                        "INSERT INTO oracle_runs VALUES (?, ?, ?, ?) "
                        "ON CONFLICT (run_id) DO UPDATE SET record = excluded.record",
                        (run.id, thread_id, run.created_at, json.dumps(run.to_json())),
                    )
                merged = db.execute(
                    "SELECT plugin FROM oracle_loaded_plugins WHERE thread_id = ? ORDER BY seq",
                    (thread_id,),
                ).fetchall()
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return [r[0] for r in merged]

    async def threads(self) -> list[str]:
        with self._lock:
            rows = self.connection.execute(
                "SELECT thread_id FROM oracle_threads ORDER BY updated_at DESC"
            ).fetchall()
        return [r[0] for r in rows]

    async def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
