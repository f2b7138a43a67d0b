"""Leases in the SQLite store: one row per leased thread, and the queue of its waiters.

Each function runs inside the caller's ``BEGIN IMMEDIATE`` transaction or is one statement,
so taking a lease is atomic across every process sharing the file.
"""

from __future__ import annotations

import sqlite3

from oracle_core.store.leases import WAITER_LIVENESS


def take(db: sqlite3.Connection, thread_id: str, owner: str, ttl: float, now: float) -> bool:
    """Take or renew the lease (see ``LeaseStore.acquire``); call it in a write transaction."""
    held = db.execute(
        "SELECT owner, expires_at FROM oracle_leases WHERE thread_id = ?", (thread_id,)
    ).fetchone()
    renewal = held is not None and held[0] == owner
    free = held is None or held[1] <= now
    if renewal or (free and not _queued_before(db, thread_id, owner, now)):
        db.execute(
            "INSERT INTO oracle_leases (thread_id, owner, ttl, expires_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, "
            "ttl = excluded.ttl, expires_at = excluded.expires_at",
            (thread_id, owner, ttl, now + ttl),
        )
        db.execute(
            "DELETE FROM oracle_lease_waiters WHERE thread_id = ? AND owner = ?",
            (thread_id, owner),
        )
        return True
    db.execute(  # in the queue: first come, first served
        "INSERT INTO oracle_lease_waiters VALUES (?, ?, ?, ?) "
        "ON CONFLICT (thread_id, owner) DO UPDATE SET seen_at = excluded.seen_at",
        (thread_id, owner, now, now),
    )
    return False


def _queued_before(db: sqlite3.Connection, thread_id: str, owner: str, now: float) -> bool:
    """Whether a live waiter of the thread asked before ``owner`` did."""
    mine = db.execute(
        "SELECT since FROM oracle_lease_waiters WHERE thread_id = ? AND owner = ?",
        (thread_id, owner),
    ).fetchone()
    found = db.execute(
        "SELECT 1 FROM oracle_lease_waiters WHERE thread_id = ? AND owner != ? "
        "AND seen_at > ? AND since < ? LIMIT 1",
        (thread_id, owner, now - WAITER_LIVENESS, mine[0] if mine else now),
    ).fetchone()
    return found is not None


def renew(db: sqlite3.Connection, thread_id: str, owner: str, now: float) -> None:
    """Extend ``owner``'s lease by its ``ttl`` from ``now``, if ``owner`` holds it (a step)."""
    db.execute(
        "UPDATE oracle_leases SET expires_at = ? + ttl WHERE thread_id = ? AND owner = ?",
        (now, thread_id, owner),
    )


def release(db: sqlite3.Connection, thread_id: str, owner: str) -> None:
    """Give up ``owner``'s lease, if it holds it."""
    db.execute("DELETE FROM oracle_leases WHERE thread_id = ? AND owner = ?", (thread_id, owner))
