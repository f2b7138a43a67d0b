"""Run records in the SQLite store: saved with each step, found interrupted when abandoned."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from oracle_core.store.saving import to_json
from oracle_core.store.sqlite.codec import from_json
from oracle_core.store.sqlite.connect import immediate
from oracle_core.values.threads import RunRecord, interrupted


def records(rows: Sequence[tuple[Any, ...]]) -> list[RunRecord]:
    """The run records of rows whose first column is a saved ``record``."""
    return [RunRecord.from_json(from_json(row[0])[0]) for row in rows]


def save(db: sqlite3.Connection, thread_id: str, record: tuple[str, Any]) -> None:
    """Insert or update a run record (its clean JSON text and value; see ``to_json``)."""
    text, saved = record
    db.execute(
        "INSERT INTO oracle_runs (run_id, thread_id, created_at, record, status) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
        "record = excluded.record, status = excluded.status",
        (saved["id"], thread_id, saved["created_at"], text, saved["status"]),
    )


def _stale(db: sqlite3.Connection, only: str | None, now: float) -> list[tuple[str, str]]:
    """The ``running`` runs (of thread ``only``, or all) whose thread has no live lease."""
    rows: list[tuple[str, str]] = db.execute(
        "SELECT run_id, record FROM oracle_runs AS r "
        "WHERE status = 'running' AND (? IS NULL OR thread_id = ?) AND NOT EXISTS "
        "(SELECT 1 FROM oracle_leases AS l "
        " WHERE l.thread_id = r.thread_id AND l.expires_at > ?) "
        "ORDER BY created_at, rowid",
        (only, only, now),
    ).fetchall()
    return rows


def cut_off(db: sqlite3.Connection, now: float) -> list[RunRecord]:
    """The ``running`` runs no live lease covers, oldest first (see ``cut_off_runs``)."""
    return records([(text,) for _, text in _stale(db, None, now)])


def mark_interrupted(
    db: sqlite3.Connection, only: str | None, clock: Callable[[], float]
) -> list[str]:
    """Mark interrupted the runs no live lease covers (see ``LeaseStore.mark_interrupted``)."""
    if not _stale(db, only, clock()):
        return []  # the common case takes no write lock
    with immediate(db):
        now = clock()
        rows = _stale(db, only, now)  # again, under the lock: a lease may have been taken
        for run_id, text in rows:
            record = interrupted(RunRecord.from_json(from_json(text)[0]), now)
            db.execute(
                "UPDATE oracle_runs SET record = ?, status = ? WHERE run_id = ?",
                (to_json(record.to_json())[0], record.status, run_id),
            )
    return [run_id for run_id, _ in rows]
