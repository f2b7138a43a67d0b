"""Operations in the SQLite store: one table, every change a compare-and-set.

Each change runs in a ``BEGIN IMMEDIATE`` transaction (SQLite's one writer lock, shared by
every process on the file), reading the row and writing it under that lock, so two
processes deciding, claiming or settling one operation at once never both win. The row
keeps the whole operation as JSON (``record``) and, as columns, what queries filter on.
The functions here take the store's connection; :class:`~oracle_core.SQLiteCheckpointer`
calls them on its worker thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from oracle_core.errors import OperationNotFoundError
from oracle_core.store.base import load_operation, updated_operation
from oracle_core.store.saving import to_json
from oracle_core.store.sqlite.connect import immediate
from oracle_core.values.operations import (
    OPEN_STATUSES,
    Operation,
    operation_lease,
    settled_by_time,
)
from oracle_core.values.text import clean_text

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS oracle_operations (
    id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS oracle_operations_by_thread
    ON oracle_operations (thread_id, created_at);
CREATE INDEX IF NOT EXISTS oracle_operations_by_status ON oracle_operations (status, created_at);
"""
"""The operations table (created with the store's other tables)."""

_COLUMNS = "id, thread_id, run_id, kind, status, created_at, record"


def _dump(operation: Operation) -> tuple[str, str, str, str, str, float, str]:
    text, record = to_json(operation.to_record())
    return (
        record["id"],
        record["thread_id"],
        record["run_id"],
        record["kind"],
        record["status"],
        float(record["created_at"]),
        text,
    )


def _write(db: sqlite3.Connection, work: Callable[[], T]) -> T:
    """Run ``work`` in one ``BEGIN IMMEDIATE`` transaction."""
    with immediate(db):
        return work()


def _lease_live(db: sqlite3.Connection, key: str, now: float, owner: str | None = None) -> bool:
    row = db.execute(
        "SELECT owner FROM oracle_leases WHERE thread_id = ? AND expires_at > ?", (key, now)
    ).fetchone()
    return row is not None and (owner is None or row[0] == owner)


def _save(db: sqlite3.Connection, operation: Operation, expect_status: str) -> bool:
    """Write ``operation`` over its row if the row's status is still ``expect_status``."""
    values = _dump(operation)
    cursor = db.execute(
        "UPDATE oracle_operations SET status = ?, record = ? WHERE id = ? AND status = ?",
        (values[4], values[6], values[0], expect_status),
    )
    return cursor.rowcount == 1


def _settle(db: sqlite3.Connection, operation: Operation, now: float) -> Operation:
    """``operation`` with what time decides applied (call it inside a write transaction)."""
    alive = _lease_live(db, operation_lease(operation.id), now)
    changed = settled_by_time(operation, now, alive)
    if changed is not None and _save(db, changed, operation.status):
        return changed
    return operation


def _needs_settling(db: sqlite3.Connection, operation: Operation, now: float) -> bool:
    alive = _lease_live(db, operation_lease(operation.id), now)
    return settled_by_time(operation, now, alive) is not None


def _row(db: sqlite3.Connection, operation_id: str) -> Operation | None:
    row = db.execute(
        "SELECT record FROM oracle_operations WHERE id = ?", (operation_id,)
    ).fetchone()
    return None if row is None else load_operation(row[0])


def insert(db: sqlite3.Connection, operation: Operation) -> None:
    """Insert a new operation.

    Raises:
        ValueError: when its id exists already.
    """
    values = _dump(operation)

    def work() -> None:
        try:
            db.execute(f"INSERT INTO oracle_operations ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       values)  # fmt: skip
        except sqlite3.IntegrityError:
            raise ValueError(f"operation {values[0]!r} exists already") from None

    _write(db, work)


def get(db: sqlite3.Connection, operation_id: str, now: float) -> Operation | None:
    """The operation, settled first (a write only when something must change)."""
    operation_id = clean_text(operation_id)
    operation = _row(db, operation_id)
    if operation is None or not _needs_settling(db, operation, now):
        return operation

    def work() -> Operation | None:
        again = _row(db, operation_id)
        return None if again is None else _settle(db, again, now)

    return _write(db, work)


def select(
    db: sqlite3.Connection,
    now: float,
    *,
    thread_id: str | None,
    status: str | None,
    run_id: str | None,
    kind: str | None,
    limit: int,
    write: bool = True,
) -> list[Operation] | None:
    """Operations matching the filters, oldest first, each settled first.

    With ``write`` false (a read connection) it returns ``None`` when something must be
    settled, so the caller asks again on the write connection.
    """
    clauses, values = [], []
    for column, value in (("thread_id", thread_id), ("run_id", run_id), ("kind", kind)):
        if value is not None:
            clauses.append(f"{column} = ?")
            values.append(clean_text(value))
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = db.execute(
        f"SELECT record FROM oracle_operations {where} ORDER BY created_at, rowid", values
    ).fetchall()
    found = [load_operation(r[0]) for r in rows]
    if any(_needs_settling(db, o, now) for o in found):
        if not write:
            return None

        def work() -> list[Operation]:
            return [_settle(db, o, now) for o in found]

        found = _write(db, work)
    if status is not None:
        found = [o for o in found if o.status == status]
    return found[: max(0, limit)]


def update(
    db: sqlite3.Connection,
    operation_id: str,
    now: float,
    *,
    expect: Collection[str],
    status: str,
    reason: str | None,
    result: str | None,
    error: str | None,
    details: Mapping[str, Any] | None,
) -> tuple[Operation, bool]:
    """Compare-and-set the status (see :meth:`Checkpointer.update_operation`)."""
    operation_id = clean_text(operation_id)

    def work() -> tuple[Operation, bool]:
        current = _row(db, operation_id)
        if current is None:
            raise OperationNotFoundError(
                f"no operation has the id {operation_id!r}", operation_id=operation_id
            )
        current = _settle(db, current, now)
        if current.status not in expect:
            return current, False
        changed = updated_operation(
            current,
            now,
            status=status,
            reason=reason,
            result=result,
            error=error,
            details=details,
        )
        _save(db, changed, current.status)
        return changed, True

    return _write(db, work)


def claim(db: sqlite3.Connection, operation_id: str, owner: str, now: float) -> Operation | None:
    """Claim carrying a settled operation on (see :meth:`Checkpointer.claim_operation`)."""
    operation_id, owner = clean_text(operation_id), clean_text(owner)

    def work() -> Operation | None:
        current = _row(db, operation_id)
        if current is None:
            return None
        current = _settle(db, current, now)
        if current.status in OPEN_STATUSES or current.resumed_at is not None:
            return None
        holder = current.claimed_by
        if holder == owner:
            return current
        if holder is not None and _lease_live(db, current.thread_id, now, holder):
            return None
        claimed = current.replace(claimed_by=owner, claims=current.claims + 1)
        _save(db, claimed, current.status)
        return claimed

    return _write(db, work)


def finish(
    db: sqlite3.Connection, operation_id: str, owner: str, outcome: Mapping[str, Any], now: float
) -> bool:
    """Mark a claimed operation carried on (see :meth:`Checkpointer.finish_operation`)."""
    operation_id, owner = clean_text(operation_id), clean_text(owner)

    def work() -> bool:
        current = _row(db, operation_id)
        if current is None or current.claimed_by != owner or current.resumed_at is not None:
            return False
        done = current.replace(resumed_at=now, outcome=dict(outcome))
        return _save(db, done, current.status)

    return _write(db, work)
