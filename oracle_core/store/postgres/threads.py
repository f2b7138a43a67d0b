"""Threads in the Postgres store: a load is one statement, a step one function call.

A load is one ``SELECT`` (one snapshot); a step is one call of ``oracle_append`` (one round
trip, one transaction: the thread's row is locked first, so steps on a thread queue across
processes). Each function takes a pooled connection in autocommit mode.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg

from oracle_core.store.postgres.codec import escape, thread_key, unescape
from oracle_core.store.threads import conflict
from oracle_core.values.messages import Message
from oracle_core.values.text import clean_text
from oracle_core.values.threads import RunRecord, ThreadState, ThreadSummary, ThreadTail
from oracle_core.values.titles import TITLE_SOURCE_CHARS, thread_title

Connection = psycopg.AsyncConnection[Any]

_APPEND = (
    "SELECT oracle_append(%s, %s, %s, %s::text[], %s::integer[], %s::text[], %s, %s, %s, %s, "
    "%s, %s)"
)

_READ = """
SELECT
    (SELECT string_agg(message, ',' ORDER BY seq) FROM oracle_messages
     WHERE thread_key = %(key)s AND seq >= %(first)s),
    (SELECT array_agg(tokens ORDER BY seq) FROM oracle_messages
     WHERE thread_key = %(key)s AND seq >= %(first)s),
    (SELECT coalesce(max(seq) + 1, 0) FROM oracle_messages WHERE thread_key = %(key)s),
    (SELECT array_agg(plugin ORDER BY seq) FROM oracle_loaded_plugins WHERE thread_key = %(key)s),
    (SELECT array_agg(record ORDER BY created_at, ord) FROM oracle_runs
     WHERE thread_key = %(key)s AND (NOT %(running)s OR status = 'running'))
"""

THREAD_TABLES = ("oracle_messages", "oracle_loaded_plugins", "oracle_runs", "oracle_leases",
                 "oracle_lease_waiters", "oracle_operations")  # fmt: skip
"""Tables whose rows belong to one thread (by ``thread_key``), removed with it."""


async def _read(
    conn: Connection, thread_id: str, first: int, *, running: bool
) -> tuple[str, list[int], int, list[str], list[RunRecord]]:
    """The messages from ``first`` on (joined JSON text), their tokens, the count, loads, runs."""
    cursor = await conn.execute(
        _READ, {"key": thread_key(thread_id), "first": first, "running": running}
    )
    row = await cursor.fetchone()
    assert row is not None
    text, tokens, count, loaded, runs = row
    return (
        text or "",
        list(tokens or []),
        int(count),
        [unescape(p) for p in loaded or []],
        [RunRecord.from_json(json.loads(r)) for r in runs or []],
    )


async def load(conn: Connection, thread_id: str) -> ThreadState:
    """The whole (cleaned) thread, from one snapshot."""
    text, tokens, _, loaded, runs = await _read(conn, thread_id, 0, running=False)
    return ThreadState(
        thread_id,
        messages=json.loads(f"[{text}]"),
        loaded_plugins=loaded,
        runs=runs,
        message_tokens=tokens,
    )


async def load_tail(conn: Connection, thread_id: str, since: int) -> ThreadTail:
    """The (cleaned) thread from message ``since`` on (see ``ThreadStore.load_tail``)."""
    since = max(0, since)
    # The row before the tail comes along, to check the caller's start; a past-the-end
    # ``since`` reads nothing (the count says why).
    text, tokens, count, loaded, running = await _read(
        conn, thread_id, since - 1 if since else 0, running=True
    )
    messages: list[Message] = json.loads(f"[{text}]")
    before = None
    if 0 < since <= count:
        before, messages, tokens = messages[0], messages[1:], tokens[1:]
    elif since > count:
        messages, tokens = [], []
    return ThreadTail(
        thread_id=thread_id,
        since=since,
        messages=messages,
        message_tokens=tokens,
        count=count,
        loaded_plugins=loaded,
        running=running,
        before=before,
    )


def append_arguments(
    thread_id: str,
    *,
    base: int,
    rows: tuple[list[str], list[int]],
    loaded: Sequence[str],
    record: tuple[str, Any] | None,
    lease: str | None,
    now: float | None,
) -> tuple[Any, ...]:
    """The arguments of ``oracle_append`` for a step of encoded message ``rows`` and ``record``."""
    return (
        thread_key(thread_id),
        escape(thread_id),
        base,
        rows[0],
        rows[1],
        list(dict.fromkeys(escape(clean_text(p)) for p in loaded)),
        None if record is None else escape(record[1]["id"]),
        None if record is None else record[1]["created_at"],
        None if record is None else record[0],
        None if record is None else record[1]["status"],
        None if lease is None else escape(clean_text(lease)),
        now,
    )


async def append(conn: Connection, thread_id: str, base: int, args: tuple[Any, ...]) -> list[str]:
    """Save one step (:func:`append_arguments`); the thread's loads after the merge.

    Raises:
        ThreadConflictError: when the thread has moved past ``base``.
    """
    try:
        row = await (await conn.execute(_APPEND, args)).fetchone()
    except psycopg.DatabaseError as error:
        if error.sqlstate == "OR409":
            raise conflict(thread_id, base, int(error.diag.message_detail or 0)) from None
        if isinstance(error, psycopg.errors.UniqueViolation):  # a first step raced
            raise conflict(thread_id, base, base + 1) from None
        raise
    assert row is not None
    return [unescape(p) for p in row[0]]


async def listing(conn: Connection) -> list[str]:
    """Every thread id, most recently updated first."""
    cursor = await conn.execute("SELECT thread_id FROM oracle_threads ORDER BY updated_at DESC")
    return [unescape(r[0]) for r in await cursor.fetchall()]


# jsonb holds no U+0000: each escape of one becomes a space's (one whose backslash is itself
# escaped, text that reads "\\u0000", is left alone; a title loses nothing by it).
_FIRST_USER_TEXT = rf"""
(SELECT CASE jsonb_typeof(f.j -> 'content')
   WHEN 'string' THEN left(f.j ->> 'content', {TITLE_SOURCE_CHARS})
   WHEN 'array' THEN (
     SELECT left(string_agg(CASE e.p ->> 'type'
       WHEN 'text' THEN coalesce(e.p ->> 'text', '') WHEN 'image_url' THEN '[image]' END,
       ' ' ORDER BY e.n), {TITLE_SOURCE_CHARS})
     FROM jsonb_array_elements(f.j -> 'content') WITH ORDINALITY AS e(p, n))
   ELSE '' END
 FROM (SELECT c.j FROM oracle_messages m,
         LATERAL (SELECT regexp_replace(
           m.message, '(?<!\\)((?:\\\\)*)\\u0000', '\1\\u0020', 'g')::jsonb AS j) c
       WHERE m.thread_key = t.thread_key AND c.j ->> 'role' = 'user'
       ORDER BY m.seq LIMIT 1) f)"""
"""The text of a thread's first user message, at most TITLE_SOURCE_CHARS of it."""


async def summaries(conn: Connection, limit: int | None) -> list[ThreadSummary]:
    """The threads with their times, sizes and titles, most recently updated first."""
    cursor = await conn.execute(
        "SELECT t.thread_id, t.created_at, t.updated_at, "
        "(SELECT count(*) FROM oracle_messages m WHERE m.thread_key = t.thread_key), "
        "(SELECT coalesce(sum(tokens), 0) FROM oracle_messages m "
        " WHERE m.thread_key = t.thread_key), "
        "(SELECT count(*) FROM oracle_runs r WHERE r.thread_key = t.thread_key), "
        f"{_FIRST_USER_TEXT} "
        "FROM oracle_threads t ORDER BY t.updated_at DESC LIMIT %s",
        (limit,),
    )
    return [
        ThreadSummary(
            unescape(r[0]),
            created_at=float(r[1]),
            updated_at=float(r[2]),
            messages=int(r[3]),
            tokens=int(r[4]),
            runs=int(r[5]),
            title=thread_title(r[6] or ""),
        )
        for r in await cursor.fetchall()
    ]


async def delete(conn: Connection, thread_id: str) -> bool:
    """Remove the thread and every row kept for it, in one transaction; whether it existed."""
    key = thread_key(thread_id)
    async with conn.transaction():
        cursor = await conn.execute("DELETE FROM oracle_threads WHERE thread_key = %s", (key,))
        existed = cursor.rowcount > 0
        for table in THREAD_TABLES:
            await conn.execute(f"DELETE FROM {table} WHERE thread_key = %s", (key,))
    return existed
