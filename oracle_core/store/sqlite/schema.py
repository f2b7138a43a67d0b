"""The SQLite store's tables, and the migration of files made by an older release."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from oracle_core.store.sqlite import credentials as credential_sql
from oracle_core.store.sqlite import operations as operation_sql
from oracle_core.store.sqlite import usage as usage_sql
from oracle_core.store.sqlite.connect import connect_sqlite, immediate

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
    tokens INTEGER,
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
    record TEXT NOT NULL,
    status TEXT
);
CREATE INDEX IF NOT EXISTS oracle_runs_by_thread ON oracle_runs (thread_id, created_at);
CREATE TABLE IF NOT EXISTS oracle_lease_waiters (
    thread_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    since REAL NOT NULL,
    seen_at REAL NOT NULL,
    PRIMARY KEY (thread_id, owner)
);
CREATE TABLE IF NOT EXISTS oracle_leases (
    thread_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    ttl REAL NOT NULL,
    expires_at REAL NOT NULL
);
"""
"""The tables; files made before ``tokens`` and ``status`` existed gain them on open."""

THREAD_TABLES = (
    "oracle_messages",
    "oracle_loaded_plugins",
    "oracle_runs",
    "oracle_lease_waiters",
    "oracle_leases",
    "oracle_operations",
)
"""The tables besides ``oracle_threads`` whose rows belong to one thread (``delete``)."""

# Columns added after the first release: (table, column, SQL filling it in for old rows).
_ADDED_COLUMNS = (
    ("oracle_messages", "tokens INTEGER", None),  # counted when the row is first loaded
    (
        "oracle_runs",
        "status TEXT",
        "UPDATE oracle_runs SET status = json_extract(record, '$.status')",
    ),
)

_AFTER_MIGRATION = """
CREATE INDEX IF NOT EXISTS oracle_runs_running ON oracle_runs (thread_id) WHERE status = 'running';
"""


def _migrate(db: sqlite3.Connection) -> None:
    """Add the columns a file made by an older release lacks (once; safe across processes)."""

    def missing() -> list[tuple[str, str, str | None]]:
        found = []
        for table, column, fill in _ADDED_COLUMNS:
            names = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
            if column.split()[0] not in names:
                found.append((table, column, fill))
        return found

    if missing():
        with immediate(db):
            for table, column, fill in missing():  # again: another process may have been first
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
                if fill:
                    db.execute(fill)
    db.executescript(_AFTER_MIGRATION)


def open_store_file(path: Path, busy_timeout: float) -> sqlite3.Connection:
    """The store's write connection to ``path``: every table created, an older file migrated."""
    db = connect_sqlite(
        path,
        schema=SCHEMA + credential_sql.SCHEMA + operation_sql.SCHEMA + usage_sql.SCHEMA,
        busy_timeout=busy_timeout,
    )
    try:
        _migrate(db)
    except BaseException:
        db.close()
        raise
    return db
