"""The SQL of stored credentials in the SQLite store (only sealed values, never clear text).

:mod:`.schema` creates the table with the store's others, and
:class:`~oracle_core.store.sqlite.checkpointer.SQLiteCheckpointer` runs these functions on its
worker threads; each write is one transaction.
"""

from __future__ import annotations

import sqlite3

from oracle_core.store.sqlite.connect import immediate
from oracle_core.values.credentials import CredentialRecord

SCHEMA = """
CREATE TABLE IF NOT EXISTS oracle_credentials (
    plugin TEXT NOT NULL,
    name TEXT NOT NULL,
    user_id TEXT NOT NULL,
    sealed TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (plugin, name, user_id)
);
"""
"""The table: one row per plugin, connection and user (``""`` for a shared connection)."""


def save(db: sqlite3.Connection, key: tuple[str, str, str], sealed: str, now: float) -> None:
    """Insert or replace the credential of ``key`` (plugin, name, user id), keeping ``created_at``."""
    with immediate(db):
        db.execute(
            "INSERT INTO oracle_credentials VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (plugin, name, user_id) DO UPDATE SET sealed = excluded.sealed, "
            "updated_at = excluded.updated_at",
            (*key, sealed, now, now),
        )


def load(db: sqlite3.Connection, key: tuple[str, str, str]) -> CredentialRecord | None:
    """The credential of ``key`` with its sealed value, or ``None``."""
    row = db.execute(
        "SELECT plugin, name, user_id, created_at, updated_at, sealed FROM oracle_credentials "
        "WHERE plugin = ? AND name = ? AND user_id = ?",
        key,
    ).fetchone()
    return None if row is None else CredentialRecord(*row)


def delete(db: sqlite3.Connection, key: tuple[str, str, str]) -> bool:
    """Remove the credential of ``key``; whether there was one."""
    with immediate(db):
        gone = db.execute(
            "DELETE FROM oracle_credentials WHERE plugin = ? AND name = ? AND user_id = ?", key
        ).rowcount
    return bool(gone)


def listing(
    db: sqlite3.Connection, plugin: str | None, user_id: str | None
) -> list[CredentialRecord]:
    """The stored credentials without their values, by plugin, name and user id."""
    rows = db.execute(
        "SELECT plugin, name, user_id, created_at, updated_at FROM oracle_credentials "
        "WHERE (? IS NULL OR plugin = ?) AND (? IS NULL OR user_id = ?) "
        "ORDER BY plugin, name, user_id",
        (plugin, plugin, user_id, user_id),
    ).fetchall()
    return [CredentialRecord(*row) for row in rows]
