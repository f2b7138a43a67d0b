"""SQLite connections set up the way oracle-core uses them, for the core and for plugins.

Plugins that keep their own tables in the oracle's database (``oracle.settings.database_path``)
open their connection with :func:`connect_sqlite`, so every writer agrees on WAL mode, lock
waiting and transactions.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


def connect_sqlite(
    path: str | Path, *, schema: str = "", busy_timeout: float = 30.0
) -> sqlite3.Connection:
    """Open (creating its folder if needed) the SQLite database at ``path``.

    The connection is in autocommit mode (use explicit ``BEGIN IMMEDIATE`` ... ``COMMIT``
    for multi-statement writes), in WAL mode with ``synchronous=NORMAL`` (durable across an
    application crash; readers never block the writer), may be used from any thread (guard
    it with a lock), and waits up to ``busy_timeout`` seconds for another writer's lock.

    Args:
        path: the database file.
        schema: SQL run once after opening (``CREATE TABLE IF NOT EXISTS ...``).
        busy_timeout: seconds to wait for a write lock held by another connection.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        if schema:
            db.executescript(schema)
    except BaseException:
        db.close()
        raise
    return db
