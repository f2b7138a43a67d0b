"""Operations in the SQLite store: one table, every change a compare-and-set.

Each change runs in a ``BEGIN IMMEDIATE`` transaction (SQLite's one writer lock, shared by
every process on the file): the row and the facts its rule needs (the leases) are read under
that lock, the rule of :mod:`oracle_core.values.operations` decides, and its ``save`` is
written, so two processes deciding, claiming or settling one operation at once never both
win. The row keeps the whole operation as JSON (``record``) and, as columns, what queries
filter on. The functions here take the store's connection; :class:`~oracle_core.SQLiteCheckpointer`
calls them on its worker thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from oracle_core.store.saving import load_operation, to_json
from oracle_core.store.sqlite.connect import immediate
from oracle_core.values import operations as rules
from oracle_core.values.operations import Facts, Operation, Ruling, Update, operation_lease
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


def _holder(db: sqlite3.Connection, key: str, now: float) -> str | None:
    """The owner of the live lease ``key``, if any."""
    row = db.execute(
        "SELECT owner FROM oracle_leases WHERE thread_id = ? AND expires_at > ?", (key, now)
    ).fetchone()
    return None if row is None else str(row[0])


def _facts(db: sqlite3.Connection, operation: Operation | None, now: float) -> Facts:
    if operation is None:
        return Facts(now)
    return Facts(
        now,
        worker_alive=_holder(db, operation_lease(operation.id), now) is not None,
        thread_holder=_holder(db, operation.thread_id, now),
    )


def _apply(db: sqlite3.Connection, ruling: Ruling[T]) -> T:
    """Write the ruling's ``save`` over its row (call it inside a write transaction)."""
    if ruling.save is not None:
        values = _dump(ruling.save)
        db.execute(
            "UPDATE oracle_operations SET status = ?, record = ? WHERE id = ?",
            (values[4], values[6], values[0]),
        )
    return ruling.answer


def _settles(db: sqlite3.Connection, operation: Operation, now: float) -> bool:
    """Whether reading ``operation`` must write what time decided."""
    return rules.settle(operation, _facts(db, operation, now)).save is not None


def _row(db: sqlite3.Connection, operation_id: str) -> Operation | None:
    row = db.execute(
        "SELECT record FROM oracle_operations WHERE id = ?", (operation_id,)
    ).fetchone()
    return None if row is None else load_operation(row[0])


Rule = Callable[[Operation | None, Facts], Ruling[T]]


def _decide(db: sqlite3.Connection, operation_id: str, now: float, rule: Rule[T]) -> T:
    """Read the row and its facts, apply ``rule`` and write its decision, in one transaction."""
    with immediate(db):
        current = _row(db, operation_id)
        return _apply(db, rule(current, _facts(db, current, now)))


def insert(db: sqlite3.Connection, operation: Operation) -> None:
    """Insert a new operation.

    Raises:
        ValueError: when its id exists already.
    """
    values = _dump(operation)
    with immediate(db):
        try:
            db.execute(f"INSERT INTO oracle_operations ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       values)  # fmt: skip
        except sqlite3.IntegrityError:
            raise ValueError(f"operation {values[0]!r} exists already") from None


def get(db: sqlite3.Connection, operation_id: str, now: float) -> Operation | None:
    """The operation, settled first (a write only when something must change)."""
    operation_id = clean_text(operation_id)
    operation = _row(db, operation_id)
    if operation is None or not _settles(db, operation, now):
        return operation

    with immediate(db):  # again, under the lock: another process may have settled it
        again = _row(db, operation_id)
        return None if again is None else _apply(db, rules.settle(again, _facts(db, again, now)))


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
    if any(_settles(db, o, now) for o in found):
        if not write:
            return None
        with immediate(db):
            found = [_apply(db, rules.settle(o, _facts(db, o, now))) for o in found]
    if status is not None:
        found = [o for o in found if o.status == status]
    return found[: max(0, limit)]


def update(db: sqlite3.Connection, request: Update, now: float) -> tuple[Operation, bool]:
    """Compare-and-set the status (see :func:`oracle_core.values.operations.update`)."""
    operation_id = clean_text(request.operation_id)
    return _decide(db, operation_id, now, lambda o, facts: rules.update(o, request, facts))


def claim(db: sqlite3.Connection, operation_id: str, owner: str, now: float) -> Operation | None:
    """Claim carrying a settled operation on (see :func:`oracle_core.values.operations.claim`)."""
    owner = clean_text(owner)
    return _decide(db, clean_text(operation_id), now, lambda o, facts: rules.claim(o, owner, facts))


def finish(
    db: sqlite3.Connection, operation_id: str, owner: str, outcome: Mapping[str, Any], now: float
) -> bool:
    """Mark a claimed operation carried on (see :func:`oracle_core.values.operations.finish`)."""
    owner = clean_text(owner)
    return _decide(
        db, clean_text(operation_id), now, lambda o, facts: rules.finish(o, owner, outcome, now)
    )
