"""Operations in the Postgres store: one table, every change a compare-and-set.

Each change runs in one transaction that locks the operation's row (``SELECT ... FOR
UPDATE``) before reading it, so two processes deciding, claiming or settling one operation
at once queue on the row and never both win. The row keeps the whole operation as JSON
(``record``) and, as columns, what queries filter on. The table comes with migration 3.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import psycopg

from oracle_core.errors import OperationNotFoundError
from oracle_core.store.base import load_operation, updated_operation
from oracle_core.store.postgres.codec import escape, thread_key
from oracle_core.store.saving import to_json
from oracle_core.values.operations import (
    OPEN_STATUSES,
    Operation,
    operation_lease,
    settled_by_time,
)
from oracle_core.values.text import clean_json, clean_text

Connection = psycopg.AsyncConnection[Any]

MIGRATION = """
CREATE TABLE oracle_operations (
    id text PRIMARY KEY,
    thread_key bytea NOT NULL,
    run_id text NOT NULL,
    kind text NOT NULL,
    status text NOT NULL,
    created_at double precision NOT NULL,
    record text NOT NULL,
    ord bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX oracle_operations_by_thread ON oracle_operations (thread_key, created_at);
CREATE INDEX oracle_operations_by_status ON oracle_operations (status, created_at);
"""
"""The operations table."""


async def _now(conn: Connection, now: float | None) -> float:
    if now is not None:
        return now
    row = await (await conn.execute("SELECT oracle_now(NULL)")).fetchone()
    assert row is not None
    return float(row[0])


async def _lease_live(conn: Connection, key: str, now: float, owner: str | None = None) -> bool:
    cursor = await conn.execute(
        "SELECT owner FROM oracle_leases WHERE thread_key = %s AND expires_at > %s",
        (thread_key(clean_text(key)), now),
    )
    row = await cursor.fetchone()
    return row is not None and (owner is None or row[0] == escape(owner))


async def _row(conn: Connection, operation_id: str, *, lock: bool) -> Operation | None:
    cursor = await conn.execute(
        "SELECT record FROM oracle_operations WHERE id = %s" + (" FOR UPDATE" if lock else ""),
        (escape(operation_id),),
    )
    row = await cursor.fetchone()
    return None if row is None else load_operation(row[0])


async def _save(conn: Connection, operation: Operation) -> None:
    text, record = to_json(operation.to_record())
    await conn.execute(
        "UPDATE oracle_operations SET status = %s, record = %s WHERE id = %s",
        (record["status"], text, escape(record["id"])),
    )


async def _settle(conn: Connection, operation: Operation, now: float) -> Operation:
    """``operation`` with what time decides applied (its row locked by the caller)."""
    alive = await _lease_live(conn, operation_lease(operation.id), now)
    changed = settled_by_time(operation, now, alive)
    if changed is None:
        return operation
    await _save(conn, changed)
    return changed


async def _needs_settling(conn: Connection, operation: Operation, now: float) -> bool:
    alive = await _lease_live(conn, operation_lease(operation.id), now)
    return settled_by_time(operation, now, alive) is not None


async def insert(conn: Connection, operation: Operation) -> None:
    """Insert a new operation.

    Raises:
        ValueError: when its id exists already.
    """
    text, record = to_json(operation.to_record())
    try:
        await conn.execute(
            "INSERT INTO oracle_operations (id, thread_key, run_id, kind, status, created_at, "
            "record) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                escape(record["id"]),
                thread_key(record["thread_id"]),
                escape(record["run_id"]),
                record["kind"],
                record["status"],
                float(record["created_at"]),
                text,
            ),
        )
    except psycopg.errors.UniqueViolation:
        raise ValueError(f"operation {record['id']!r} exists already") from None


async def get(conn: Connection, operation_id: str, now: float | None) -> Operation | None:
    """The operation, settled first (a write only when something must change)."""
    operation_id = clean_text(operation_id)
    operation = await _row(conn, operation_id, lock=False)
    moment = await _now(conn, now)
    if operation is None or not await _needs_settling(conn, operation, moment):
        return operation
    async with conn.transaction():
        again = await _row(conn, operation_id, lock=True)
        return None if again is None else await _settle(conn, again, moment)


async def select(
    conn: Connection,
    now: float | None,
    *,
    thread_id: str | None,
    status: str | None,
    run_id: str | None,
    kind: str | None,
    limit: int,
) -> list[Operation]:
    """Operations matching the filters, oldest first, each settled first."""
    clauses: list[str] = []
    values: list[bytes | str] = []
    if thread_id is not None:
        clauses.append("thread_key = %s")
        values.append(thread_key(clean_text(thread_id)))
    for column, value in (("run_id", run_id), ("kind", kind)):
        if value is not None:
            clauses.append(f"{column} = %s")
            values.append(escape(clean_text(value)))
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    query = f"SELECT id, record FROM oracle_operations {where} ORDER BY created_at, ord"
    rows = await (await conn.execute(query, values)).fetchall()
    found = [load_operation(r[1]) for r in rows]
    moment = await _now(conn, now)
    settled = []
    for operation in found:
        if await _needs_settling(conn, operation, moment):
            async with conn.transaction():
                again = await _row(conn, operation.id, lock=True)
                if again is None:
                    continue
                operation = await _settle(conn, again, moment)
        settled.append(operation)
    if status is not None:
        settled = [o for o in settled if o.status == status]
    return settled[: max(0, limit)]


async def update(
    conn: Connection,
    operation_id: str,
    now: float | None,
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
    async with conn.transaction():
        current = await _row(conn, operation_id, lock=True)
        if current is None:
            raise OperationNotFoundError(
                f"no operation has the id {operation_id!r}", operation_id=operation_id
            )
        moment = await _now(conn, now)
        current = await _settle(conn, current, moment)
        if current.status not in expect:
            return current, False
        changed = updated_operation(
            current,
            moment,
            status=status,
            reason=reason,
            result=result,
            error=error,
            details=details,
        )
        await _save(conn, changed)
        return changed, True


async def claim(
    conn: Connection, operation_id: str, owner: str, now: float | None
) -> Operation | None:
    """Claim carrying a settled operation on (see :meth:`Checkpointer.claim_operation`)."""
    operation_id, owner = clean_text(operation_id), clean_text(owner)
    async with conn.transaction():
        current = await _row(conn, operation_id, lock=True)
        if current is None:
            return None
        moment = await _now(conn, now)
        current = await _settle(conn, current, moment)
        if current.status in OPEN_STATUSES or current.resumed_at is not None:
            return None
        holder = current.claimed_by
        if holder == owner:
            return current
        if holder is not None and await _lease_live(conn, current.thread_id, moment, holder):
            return None
        claimed = current.replace(claimed_by=owner, claims=current.claims + 1)
        await _save(conn, claimed)
        return claimed


async def finish(
    conn: Connection,
    operation_id: str,
    owner: str,
    outcome: Mapping[str, Any],
    now: float | None,
) -> bool:
    """Mark a claimed operation carried on (see :meth:`Checkpointer.finish_operation`)."""
    operation_id, owner = clean_text(operation_id), clean_text(owner)
    async with conn.transaction():
        current = await _row(conn, operation_id, lock=True)
        if current is None or current.claimed_by != owner or current.resumed_at is not None:
            return False
        moment = await _now(conn, now)
        await _save(conn, current.replace(resumed_at=moment, outcome=clean_json(dict(outcome))))
        return True
