"""The SQL of stored credentials in the Postgres store (sealed values only, never clear text).

The table comes with migration 2 (:mod:`.schema`); each function is one statement, so one
transaction. Plugin, connection and user names are stored escaped (:mod:`.codec`).
"""

from __future__ import annotations

from typing import Any

import psycopg

from oracle_core.store.postgres.codec import escape, unescape
from oracle_core.values.credentials import CredentialRecord

MIGRATION = """
CREATE TABLE oracle_credentials (
    plugin text NOT NULL,
    name text NOT NULL,
    user_id text NOT NULL,
    sealed text NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    PRIMARY KEY (plugin, name, user_id)
);
"""
"""The table: one row per plugin, connection and user (``""`` for a shared connection)."""

Key = tuple[str, str, str]


def _key(key: Key) -> tuple[str, str, str]:
    return (escape(key[0]), escape(key[1]), escape(key[2]))


def _record(row: tuple[Any, ...]) -> CredentialRecord:
    sealed = row[5] if len(row) > 5 else ""
    return CredentialRecord(
        unescape(row[0]), unescape(row[1]), unescape(row[2]), float(row[3]), float(row[4]), sealed
    )


async def save(
    conn: psycopg.AsyncConnection[Any], key: Key, sealed: str, now: float | None
) -> None:
    """Insert or replace the credential of ``key`` (plugin, name, user id), keeping ``created_at``."""
    await conn.execute(
        "INSERT INTO oracle_credentials VALUES (%s, %s, %s, %s, oracle_now(%s), oracle_now(%s)) "
        "ON CONFLICT (plugin, name, user_id) DO UPDATE SET sealed = excluded.sealed, "
        "updated_at = excluded.updated_at",
        (*_key(key), sealed, now, now),
    )


async def load(conn: psycopg.AsyncConnection[Any], key: Key) -> CredentialRecord | None:
    """The credential of ``key`` with its sealed value, or ``None``."""
    cursor = await conn.execute(
        "SELECT plugin, name, user_id, created_at, updated_at, sealed FROM oracle_credentials "
        "WHERE plugin = %s AND name = %s AND user_id = %s",
        _key(key),
    )
    row = await cursor.fetchone()
    return None if row is None else _record(row)


async def delete(conn: psycopg.AsyncConnection[Any], key: Key) -> bool:
    """Remove the credential of ``key``; whether there was one."""
    cursor = await conn.execute(
        "DELETE FROM oracle_credentials WHERE plugin = %s AND name = %s AND user_id = %s",
        _key(key),
    )
    return cursor.rowcount > 0


async def listing(
    conn: psycopg.AsyncConnection[Any], plugin: str | None, user_id: str | None
) -> list[CredentialRecord]:
    """The stored credentials without their values, by plugin, name and user id."""
    cursor = await conn.execute(
        "SELECT plugin, name, user_id, created_at, updated_at FROM oracle_credentials "
        "WHERE (%(plugin)s::text IS NULL OR plugin = %(plugin)s) "
        "AND (%(user)s::text IS NULL OR user_id = %(user)s) ORDER BY plugin, name, user_id",
        {
            "plugin": None if plugin is None else escape(plugin),
            "user": None if user_id is None else escape(user_id),
        },
    )
    return [_record(row) for row in await cursor.fetchall()]
