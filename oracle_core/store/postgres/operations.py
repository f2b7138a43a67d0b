"""Operations in the Postgres store: one table, every change a compare-and-set.

Each change runs in one transaction that locks the operation's row (``SELECT ... FOR
UPDATE``) before reading it and the facts its rule needs (the clock, the leases), so two
processes deciding, claiming or settling one operation at once queue on the row and never
both win; the rule of :mod:`oracle_core.values.operations` decides, and its ``save`` is
written. The row keeps the whole operation as JSON (``record``) and, as columns, what
queries filter on. The table comes with migration 3.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import psycopg

from oracle_core.store.postgres.codec import escape, thread_key, unescape
from oracle_core.store.saving import load_operation, to_json
from oracle_core.values import operations as rules
from oracle_core.values.operations import Facts, Operation, Ruling, Update, operation_lease
from oracle_core.values.text import clean_text

T = TypeVar("T")
Connection = psycopg.AsyncConnection[Any]
Rule = Callable[[Operation | None, Facts], Ruling[T]]

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


_FACTS = """
SELECT t.now,
    (SELECT owner FROM oracle_leases WHERE thread_key = %(worker)s AND expires_at > t.now),
    (SELECT owner FROM oracle_leases WHERE thread_key = %(thread)s AND expires_at > t.now)
FROM (SELECT oracle_now(%(now)s) AS now) AS t
"""


async def _now(conn: Connection, now: float | None) -> float:
    if now is not None:
        return now
    row = await (await conn.execute("SELECT oracle_now(NULL)")).fetchone()
    assert row is not None
    return float(row[0])


async def _facts(conn: Connection, operation: Operation | None, now: float | None) -> Facts:
    """The clock and the leases ``operation``'s rules need, in one round trip."""
    if operation is None:
        return Facts(await _now(conn, now))
    cursor = await conn.execute(
        _FACTS,
        {
            "now": now,
            "worker": thread_key(operation_lease(operation.id)),
            "thread": thread_key(clean_text(operation.thread_id)),
        },
    )
    row = await cursor.fetchone()
    assert row is not None
    return Facts(
        float(row[0]),
        worker_alive=row[1] is not None,
        thread_holder=None if row[2] is None else unescape(row[2]),
    )


async def _row(conn: Connection, operation_id: str, *, lock: bool) -> Operation | None:
    cursor = await conn.execute(
        "SELECT record FROM oracle_operations WHERE id = %s" + (" FOR UPDATE" if lock else ""),
        (escape(operation_id),),
    )
    row = await cursor.fetchone()
    return None if row is None else load_operation(row[0])


async def _apply(conn: Connection, ruling: Ruling[T]) -> T:
    """Write the ruling's ``save`` over its row (locked by the caller)."""
    if ruling.save is not None:
        text, record = to_json(ruling.save.to_record())
        await conn.execute(
            "UPDATE oracle_operations SET status = %s, record = %s WHERE id = %s",
            (record["status"], text, escape(record["id"])),
        )
    return ruling.answer


async def _decide(conn: Connection, operation_id: str, now: float | None, rule: Rule[T]) -> T:
    """Lock the row, read its facts, apply ``rule`` and write its decision, in one transaction."""
    async with conn.transaction():
        current = await _row(conn, operation_id, lock=True)
        return await _apply(conn, rule(current, await _facts(conn, current, now)))


async def _settled(conn: Connection, operation: Operation, now: float) -> Operation | None:
    """``operation`` settled: read as it is when time changes nothing, else locked and written."""
    if rules.settle(operation, await _facts(conn, operation, now)).save is None:
        return operation
    return await _decide(
        conn,
        operation.id,
        now,
        lambda again, facts: Ruling(None) if again is None else rules.settle(again, facts),
    )


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
    operation = await _row(conn, clean_text(operation_id), lock=False)
    if operation is None:
        return None
    return await _settled(conn, operation, await _now(conn, now))


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
    moment = await _now(conn, now)
    settled = []
    for row in rows:
        operation = await _settled(conn, load_operation(row[1]), moment)
        if operation is not None and (status is None or operation.status == status):
            settled.append(operation)
    return settled[: max(0, limit)]


async def update(conn: Connection, request: Update, now: float | None) -> tuple[Operation, bool]:
    """Compare-and-set the status (see :func:`oracle_core.values.operations.update`)."""
    operation_id = clean_text(request.operation_id)
    return await _decide(conn, operation_id, now, lambda o, facts: rules.update(o, request, facts))


async def claim(
    conn: Connection, operation_id: str, owner: str, now: float | None
) -> Operation | None:
    """Claim carrying a settled operation on (see :func:`oracle_core.values.operations.claim`)."""
    owner = clean_text(owner)
    return await _decide(
        conn, clean_text(operation_id), now, lambda o, facts: rules.claim(o, owner, facts)
    )


async def finish(
    conn: Connection,
    operation_id: str,
    owner: str,
    outcome: Mapping[str, Any],
    now: float | None,
) -> bool:
    """Mark a claimed operation carried on (see :func:`oracle_core.values.operations.finish`)."""
    owner = clean_text(owner)
    return await _decide(
        conn,
        clean_text(operation_id),
        now,
        lambda o, facts: rules.finish(o, owner, outcome, facts.now),
    )
