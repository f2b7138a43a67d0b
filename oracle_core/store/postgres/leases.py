"""Leases in the Postgres store, and the runs found interrupted when no lease covers them.

A lease is taken by ``oracle_acquire`` under a transaction advisory lock (see
:mod:`.schema`), so two processes never both take one thread.
"""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg

from oracle_core.store.leases import WAITER_LIVENESS
from oracle_core.store.postgres.codec import escape, thread_key, unescape
from oracle_core.store.saving import to_json
from oracle_core.values.threads import RunRecord, interrupted

Connection = psycopg.AsyncConnection[Any]

_UNLEASED = (
    "NOT EXISTS (SELECT 1 FROM oracle_leases AS l WHERE l.thread_key = r.thread_key "
    "AND l.expires_at > oracle_now(%(now)s))"
)


async def acquire(
    conn: Connection, thread_id: str, owner: str, ttl: float, now: float | None
) -> bool:
    """Take or renew the (cleaned) thread's lease for ``owner`` (see ``LeaseStore.acquire``)."""
    args = (thread_key(thread_id), escape(owner), float(ttl), WAITER_LIVENESS, now)
    row = await (await conn.execute("SELECT oracle_acquire(%s, %s, %s, %s, %s)", args)).fetchone()
    return bool(row and row[0])


async def release(conn: Connection, thread_id: str, owner: str) -> None:
    """Give up ``owner``'s lease on the (cleaned) thread, if it holds it."""
    await conn.execute(
        "DELETE FROM oracle_leases WHERE thread_key = %s AND owner = %s",
        (thread_key(thread_id), escape(owner)),
    )


async def mark_interrupted(conn: Connection, thread_id: str | None, now: float | None) -> list[str]:
    """Mark interrupted the runs no live lease covers (see ``LeaseStore.mark_interrupted``).

    Each run is marked by its own compare-and-set, so a run whose thread was taken (or that
    ended) since it was read is left as it is.
    """
    key = None if thread_id is None else thread_key(thread_id)
    cursor = await conn.execute(
        "SELECT run_id, record FROM oracle_runs AS r WHERE status = 'running' "
        f"AND (%(key)s::bytea IS NULL OR thread_key = %(key)s) AND {_UNLEASED} "
        "ORDER BY created_at, ord",
        {"key": key, "now": now},
    )
    marked = []
    for run_id, text in await cursor.fetchall():
        record = interrupted(
            RunRecord.from_json(json.loads(text)), now if now is not None else time.time()
        )
        done = await conn.execute(
            "UPDATE oracle_runs AS r SET record = %(record)s, status = 'interrupted' "
            f"WHERE run_id = %(run)s AND status = 'running' AND {_UNLEASED}",
            {"record": to_json(record.to_json())[0], "run": run_id, "now": now},
        )
        if done.rowcount:  # else a run took the thread (or ended) meanwhile
            marked.append(unescape(run_id))
    return marked


async def cut_off(conn: Connection, now: float | None) -> list[RunRecord]:
    """The ``running`` runs no live lease covers, oldest first (see ``cut_off_runs``)."""
    cursor = await conn.execute(
        f"SELECT record FROM oracle_runs AS r WHERE status = 'running' AND {_UNLEASED} "
        "ORDER BY created_at, ord",
        {"now": now},
    )
    return [RunRecord.from_json(json.loads(text)) for (text,) in await cursor.fetchall()]
