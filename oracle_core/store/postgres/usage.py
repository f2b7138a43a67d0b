"""The SQL of the usage ledger in the Postgres store: one row per model call and tool call.

The table comes with migration 5 (:mod:`.schema`). Users and threads are looked up by the
SHA-256 of their ids (:func:`~oracle_core.store.postgres.codec.thread_key`), so an index
entry stays small whatever the id; the ids themselves are kept escaped (:mod:`.codec`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from oracle_core.store.postgres.codec import escape, thread_key, unescape
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

MIGRATION = """
CREATE TABLE oracle_usage (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at double precision NOT NULL,
    kind text NOT NULL,
    run_id text NOT NULL,
    thread_key bytea NOT NULL,
    thread_id text NOT NULL,
    user_key bytea NOT NULL,
    user_id text NOT NULL,
    model text NOT NULL,
    tool text NOT NULL,
    plugin text NOT NULL,
    prompt_tokens bigint NOT NULL,
    completion_tokens bigint NOT NULL,
    cost double precision,
    is_error boolean NOT NULL
);
CREATE INDEX oracle_usage_by_user ON oracle_usage (user_key, at);
CREATE INDEX oracle_usage_by_thread ON oracle_usage (thread_key, at);
CREATE INDEX oracle_usage_by_time ON oracle_usage (at);
"""
"""The ledger; a thread's rows outlive the thread (they are what was spent)."""

_COLUMNS = (
    "at, kind, run_id, thread_id, user_id, model, tool, plugin, prompt_tokens, "
    "completion_tokens, cost, is_error"
)


def _row(entry: UsageEntry) -> tuple[Any, ...]:
    return (
        entry.at, entry.kind, escape(entry.run_id), thread_key(entry.thread_id),
        escape(entry.thread_id), thread_key(entry.user_id), escape(entry.user_id),
        escape(entry.model), escape(entry.tool), escape(entry.plugin), entry.prompt_tokens,
        entry.completion_tokens, entry.cost, entry.is_error,
    )  # fmt: skip


def _entry(row: tuple[Any, ...]) -> UsageEntry:
    return UsageEntry(
        float(row[0]), row[1], unescape(row[2]), unescape(row[3]), unescape(row[4]),
        unescape(row[5]), unescape(row[6]), unescape(row[7]), int(row[8]), int(row[9]),
        None if row[10] is None else float(row[10]), bool(row[11]),
    )  # fmt: skip


async def insert(conn: psycopg.AsyncConnection[Any], entries: Sequence[UsageEntry]) -> None:
    """Insert ``entries`` in the transaction under way (or in one of their own)."""
    async with conn.cursor() as cursor:
        await cursor.executemany(
            "INSERT INTO oracle_usage (at, kind, run_id, thread_key, thread_id, user_key, "
            "user_id, model, tool, plugin, prompt_tokens, completion_tokens, cost, is_error) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [_row(e) for e in entries],
        )


async def record(conn: psycopg.AsyncConnection[Any], entries: Sequence[UsageEntry]) -> None:
    """Append ``entries`` in one transaction."""
    async with conn.transaction():
        await insert(conn, entries)


async def select(
    conn: psycopg.AsyncConnection[Any], user_id: str | None, since: float | None
) -> list[UsageEntry]:
    """The entries of ``user_id`` from ``since`` on (either ``None``: all), oldest first."""
    cursor = await conn.execute(
        f"SELECT {_COLUMNS} FROM oracle_usage WHERE (%(user)s::bytea IS NULL OR "
        "user_key = %(user)s) AND (%(since)s::double precision IS NULL OR at >= %(since)s) "
        "ORDER BY at, id",
        {"user": None if user_id is None else thread_key(user_id), "since": since},
    )
    return [_entry(row) for row in await cursor.fetchall()]


async def spent(
    conn: psycopg.AsyncConnection[Any], since: float, user_id: str | None, thread_id: str | None
) -> Spent:
    """What the model calls of ``user_id`` and ``thread_id`` spent from ``since`` on."""
    cursor = await conn.execute(
        "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0), coalesce(sum(cost), 0), "
        "count(*), count(*) - count(cost) FROM oracle_usage WHERE kind = 'model' "
        "AND at >= %(since)s AND (%(user)s::bytea IS NULL OR user_key = %(user)s) "
        "AND (%(thread)s::bytea IS NULL OR thread_key = %(thread)s)",
        {
            "since": since,
            "user": None if user_id is None else thread_key(user_id),
            "thread": None if thread_id is None else thread_key(thread_id),
        },
    )
    row = await cursor.fetchone()
    assert row is not None
    return Spent(int(row[0]), float(row[1]), int(row[2]), int(row[3]))


async def summary(
    conn: psycopg.AsyncConnection[Any], by: Grouping, user_id: str | None, since: float | None
) -> tuple[list[UsageGroup], UsageGroup]:
    """The groups of ``by`` and the total of the entries :func:`select` would give."""
    where = (
        "WHERE (%(user)s::bytea IS NULL OR user_key = %(user)s) "
        "AND (%(since)s::double precision IS NULL OR at >= %(since)s)"
    )
    args = {"user": None if user_id is None else thread_key(user_id), "since": since}
    tools = PLUGIN_ROWS if by == "plugin" else ""  # a run's model call is no plugin's
    key = GROUP_COLUMNS[by]
    cursor = await conn.execute(
        f"SELECT {key}, {SUMS} FROM oracle_usage {where}{tools} GROUP BY 1",
        args,
    )
    rows = await cursor.fetchall()
    cursor = await conn.execute(f"SELECT {SUMS} FROM oracle_usage {where}", args)
    overall = await cursor.fetchone()
    assert overall is not None
    groups = (group_of(unescape(row[0]), row[1:]) for row in rows)
    return ordered(groups), group_of("total", overall)
