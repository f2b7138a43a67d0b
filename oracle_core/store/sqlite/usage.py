"""The SQL of the usage ledger in the SQLite store: one row per model call and tool call.

:mod:`.schema` creates the table with the store's others (``CREATE TABLE IF NOT EXISTS``: a
file made by an older release gains it on open); each write is one transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from oracle_core.store.sqlite.connect import immediate
from oracle_core.store.usage import (
    GROUP_COLUMNS,
    PLUGIN_ROWS,
    SUMS,
    Grouping,
    Spent,
    UsageEntry,
    UsageGroup,
    group_of,
    ordered,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS oracle_usage (
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    run_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    model TEXT NOT NULL,
    tool TEXT NOT NULL,
    plugin TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost REAL,
    is_error INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS oracle_usage_by_user ON oracle_usage (user_id, at);
CREATE INDEX IF NOT EXISTS oracle_usage_by_thread ON oracle_usage (thread_id, at);
"""
"""The ledger; a thread's rows outlive the thread (they are what was spent)."""

_COLUMNS = (
    "at, kind, run_id, thread_id, user_id, model, tool, plugin, prompt_tokens, "
    "completion_tokens, cost, is_error"
)


def _row(entry: UsageEntry) -> tuple[Any, ...]:
    return (
        entry.at, entry.kind, entry.run_id, entry.thread_id, entry.user_id, entry.model,
        entry.tool, entry.plugin, entry.prompt_tokens, entry.completion_tokens, entry.cost,
        int(entry.is_error),
    )  # fmt: skip


def _entry(row: Any) -> UsageEntry:
    return UsageEntry(
        row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9],
        row[10], bool(row[11]),
    )  # fmt: skip


def rows(entries: Sequence[UsageEntry]) -> list[tuple[object, ...]]:
    """``entries`` as the table's rows (cleaned before any lock is taken)."""
    return [_row(e) for e in entries]


def insert(db: sqlite3.Connection, rows: Sequence[tuple[object, ...]]) -> None:
    """Insert ``rows`` (from :func:`rows`) in the transaction under way."""
    db.executemany(
        f"INSERT INTO oracle_usage ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def record(db: sqlite3.Connection, entries: Sequence[UsageEntry]) -> None:
    """Append ``entries`` in one transaction."""
    prepared = rows(entries)
    with immediate(db):
        insert(db, prepared)


def select(db: sqlite3.Connection, user_id: str | None, since: float | None) -> list[UsageEntry]:
    """The entries of ``user_id`` from ``since`` on (either ``None``: all), oldest first."""
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM oracle_usage WHERE (? IS NULL OR user_id = ?) "
        "AND (? IS NULL OR at >= ?) ORDER BY at, rowid",
        (user_id, user_id, since, since),
    ).fetchall()
    return [_entry(row) for row in rows]


def spent(
    db: sqlite3.Connection, since: float, user_id: str | None, thread_id: str | None
) -> Spent:
    """What the model calls of ``user_id`` and ``thread_id`` spent from ``since`` on."""
    row = db.execute(
        "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0), coalesce(sum(cost), 0), "
        "count(*), count(*) - count(cost) FROM oracle_usage WHERE kind = 'model' AND at >= ? "
        "AND (? IS NULL OR user_id = ?) AND (? IS NULL OR thread_id = ?)",
        (since, user_id, user_id, thread_id, thread_id),
    ).fetchone()
    return Spent(int(row[0]), float(row[1]), int(row[2]), int(row[3]))


def summary(
    db: sqlite3.Connection, by: Grouping, user_id: str | None, since: float | None
) -> tuple[list[UsageGroup], UsageGroup]:
    """The groups of ``by`` and the total of the entries :func:`select` would give."""
    where = "WHERE (? IS NULL OR user_id = ?) AND (? IS NULL OR at >= ?)"
    args = (user_id, user_id, since, since)
    tools = PLUGIN_ROWS if by == "plugin" else ""  # a run's model call is no plugin's
    key = GROUP_COLUMNS[by]
    rows = db.execute(
        f"SELECT {key}, {SUMS} FROM oracle_usage {where}{tools} GROUP BY {key}", args
    ).fetchall()
    overall = db.execute(f"SELECT {SUMS} FROM oracle_usage {where}", args).fetchone()
    return ordered(group_of(row[0], row[1:]) for row in rows), group_of("total", overall)
