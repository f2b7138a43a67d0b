"""The embedded default checkpointer: one SQLite file (stdlib ``sqlite3``, WAL mode)."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from oracle_core.store.base import Checkpointer
from oracle_core.store.credentials import credential_key
from oracle_core.store.leases import WAITER_LIVENESS, check_ttl
from oracle_core.store.saving import count_message, encode_messages, to_json
from oracle_core.store.sqlite import credentials as credential_sql
from oracle_core.store.sqlite import operations as operation_sql
from oracle_core.store.sqlite.connect import connect_sqlite, immediate
from oracle_core.store.threads import conflict
from oracle_core.values.credentials import CredentialRecord
from oracle_core.values.messages import Message
from oracle_core.values.operations import Operation, Update
from oracle_core.values.text import clean_text
from oracle_core.values.threads import (
    RunRecord,
    ThreadState,
    ThreadSummary,
    ThreadTail,
    interrupted,
)

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS oracle_threads (
    thread_id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS oracle_messages (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    tokens INTEGER,
    PRIMARY KEY (thread_id, seq)
);
CREATE TABLE IF NOT EXISTS oracle_loaded_plugins (
    thread_id TEXT NOT NULL,
    plugin TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (thread_id, plugin)
);
CREATE TABLE IF NOT EXISTS oracle_runs (
    run_id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    record TEXT NOT NULL,
    status TEXT
);
CREATE INDEX IF NOT EXISTS oracle_runs_by_thread ON oracle_runs (thread_id, created_at);
CREATE TABLE IF NOT EXISTS oracle_lease_waiters (
    thread_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    since REAL NOT NULL,
    seen_at REAL NOT NULL,
    PRIMARY KEY (thread_id, owner)
);
CREATE TABLE IF NOT EXISTS oracle_leases (
    thread_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    ttl REAL NOT NULL,
    expires_at REAL NOT NULL
);
"""
"""The tables; files made before ``tokens`` and ``status`` existed gain them on open."""

_THREAD_TABLES = (
    "oracle_messages",
    "oracle_loaded_plugins",
    "oracle_runs",
    "oracle_lease_waiters",
    "oracle_leases",
    "oracle_operations",
)
"""The tables besides ``oracle_threads`` whose rows belong to one thread (``delete``)."""

# Columns added after the first release: (table, column, SQL filling it in for old rows).
_ADDED_COLUMNS = (
    ("oracle_messages", "tokens INTEGER", None),  # counted when the row is first loaded
    (
        "oracle_runs",
        "status TEXT",
        "UPDATE oracle_runs SET status = json_extract(record, '$.status')",
    ),
)

_AFTER_MIGRATION = """
CREATE INDEX IF NOT EXISTS oracle_runs_running ON oracle_runs (thread_id) WHERE status = 'running';
"""

# A row saved with json.dumps' default ensure_ascii=True spells a surrogate as an escape;
# only such rows can load as invalid text (the column itself is always valid UTF-8).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _from_json(text: str) -> tuple[Any, str | None]:
    """Parse stored JSON, cleaned; with its clean text when the stored text must be rewritten."""
    value = json.loads(text)
    if _SURROGATE_ESCAPE.search(text) is None:
        return value, None
    fixed, clean = to_json(value)
    return (value, None) if clean is value else (clean, fixed)


def _migrate(db: sqlite3.Connection) -> None:
    """Add the columns a file made by an older release lacks (once; safe across processes)."""

    def missing() -> list[tuple[str, str, str | None]]:
        found = []
        for table, column, fill in _ADDED_COLUMNS:
            names = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
            if column.split()[0] not in names:
                found.append((table, column, fill))
        return found

    if missing():
        with immediate(db):
            for table, column, fill in missing():  # again: another process may have been first
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
                if fill:
                    db.execute(fill)
    db.executescript(_AFTER_MIGRATION)


class SQLiteCheckpointer(Checkpointer):
    """Stores threads in a SQLite file; several processes may share it.

    Each step is one ``BEGIN IMMEDIATE`` transaction, so a crash leaves either the whole step
    or none of it, and writers from other processes queue on SQLite's lock (up to
    ``busy_timeout`` seconds). Every SQLite call, and the cleaning and token counting of new
    messages, runs on one worker thread of the store's own, never on the event loop, so a
    loop stays responsive while another process holds the lock; calls of one store run one
    at a time, in the order made. A call whose caller is cancelled still finishes on the
    worker (an append may be saved: reload to know). The file is opened (and created, or
    migrated from an older release) by the first call.

    Args:
        path: the database file (created with its folder if missing).
        busy_timeout: seconds to wait for another process's write lock.
        clock: the wall clock leases expire by (``time.time``); tests pass their own.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._closed = False
        self._worker = ThreadPoolExecutor(1, thread_name_prefix=f"oracle-sqlite-{self.path.name}")
        # Reads have a connection and a thread of their own: in WAL mode they never wait for
        # a writer, so a save queued behind another process's lock holds up no read.
        self._read_lock = threading.Lock()
        self._reader_db: sqlite3.Connection | None = None
        self._reader = ThreadPoolExecutor(
            1, thread_name_prefix=f"oracle-sqlite-read-{self.path.name}"
        )

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection, opened now if needed (for plugins keeping tables in the file).

        It is shared with the store's worker thread; a plugin that writes through it should
        prefer its own connection (:func:`~oracle_core.connect_sqlite`) so its transactions
        never interleave with the store's.
        """
        with self._lock:
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        """The connection, opened now if needed; call it holding ``_lock``."""
        if self._closed:
            raise RuntimeError(f"{self.path} is closed")
        if self._db is None:
            db = connect_sqlite(
                self.path,
                schema=SCHEMA + credential_sql.SCHEMA + operation_sql.SCHEMA,
                busy_timeout=self.busy_timeout,
            )
            try:
                _migrate(db)
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    async def _call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` with the connection on the worker thread."""

        def run() -> T:
            with self._lock:
                return work(self._connect())

        if self._closed:
            raise RuntimeError(f"{self.path} is closed")
        return await asyncio.get_running_loop().run_in_executor(self._worker, run)

    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` with the read connection on the read thread."""

        def run() -> T:
            with self._read_lock:
                if self._closed:
                    raise RuntimeError(f"{self.path} is closed")
                if self._reader_db is None:
                    with self._lock:  # the file exists and is migrated before it is read
                        self._connect()
                    self._reader_db = connect_sqlite(self.path, busy_timeout=self.busy_timeout)
                return work(self._reader_db)

        if self._closed:
            raise RuntimeError(f"{self.path} is closed")
        return await asyncio.get_running_loop().run_in_executor(self._reader, run)

    async def load(self, thread_id: str) -> ThreadState:
        thread_id = clean_text(thread_id)
        return await self._read(lambda db: self._load(db, thread_id))

    def _load(self, db: sqlite3.Connection, thread_id: str) -> ThreadState:
        db.execute("BEGIN")  # one snapshot: messages, loads and runs from the same step
        try:
            rows = db.execute(
                "SELECT seq, message, tokens FROM oracle_messages WHERE thread_id = ? ORDER BY seq",
                (thread_id,),
            ).fetchall()
            loaded = db.execute(
                "SELECT plugin FROM oracle_loaded_plugins WHERE thread_id = ? ORDER BY seq",
                (thread_id,),
            ).fetchall()
            runs = db.execute(
                "SELECT record FROM oracle_runs WHERE thread_id = ? ORDER BY created_at, rowid",
                (thread_id,),
            ).fetchall()
        finally:
            db.execute("COMMIT")
        messages, tokens = self._decode(db, thread_id, rows)
        return ThreadState(
            thread_id,
            messages=messages,
            loaded_plugins=[clean_text(r[0]) for r in loaded],
            runs=[RunRecord.from_json(_from_json(r[0])[0]) for r in runs],
            message_tokens=tokens,
        )

    async def load_tail(self, thread_id: str, since: int) -> ThreadTail:
        thread_id = clean_text(thread_id)
        return await self._read(lambda db: self._load_tail(db, thread_id, since))

    def _load_tail(self, db: sqlite3.Connection, thread_id: str, since: int) -> ThreadTail:
        db.execute("BEGIN")  # one snapshot, as in _load
        try:
            (count,) = db.execute(
                "SELECT coalesce(max(seq) + 1, 0) FROM oracle_messages WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
            with_before = 0 < since <= count
            first = since - 1 if with_before else min(since, count)
            rows = db.execute(
                "SELECT seq, message, tokens FROM oracle_messages WHERE thread_id = ? AND seq >= ? "
                "ORDER BY seq",
                (thread_id, first),
            ).fetchall()
            loaded = db.execute(
                "SELECT plugin FROM oracle_loaded_plugins WHERE thread_id = ? ORDER BY seq",
                (thread_id,),
            ).fetchall()
            running = db.execute(
                "SELECT record FROM oracle_runs WHERE thread_id = ? AND status = 'running' "
                "ORDER BY created_at, rowid",
                (thread_id,),
            ).fetchall()
        finally:
            db.execute("COMMIT")
        messages, tokens = self._decode(db, thread_id, rows)
        before = None
        if with_before:  # the row before the tail came along, to check the caller's start
            before, messages, tokens = messages[0], messages[1:], tokens[1:]
        return ThreadTail(
            thread_id=thread_id,
            since=since,
            messages=messages,
            message_tokens=tokens,
            before=before,
            count=count,
            loaded_plugins=[clean_text(r[0]) for r in loaded],
            running=[RunRecord.from_json(_from_json(r[0])[0]) for r in running],
        )

    def _decode(
        self, db: sqlite3.Connection, thread_id: str, rows: list[tuple[int, str, int | None]]
    ) -> tuple[list[Message], list[int]]:
        """Messages and token counts of rows; rows of an older release are repaired."""
        # One decode of every row at once: far cheaper than a json.loads call per row.
        joined = "[" + ",".join(text for _, text, _ in rows) + "]"
        messages: list[Message] = json.loads(joined)
        tokens: list[int] = [count for _, _, count in rows]  # type: ignore[misc]
        repairs: list[tuple[str, int, str, int]] = []
        if None in tokens or _SURROGATE_ESCAPE.search(joined):  # rows of an older release
            for index, (seq, text, count) in enumerate(rows):
                message, fixed = _from_json(text)
                if count is None or fixed is not None:
                    messages[index], tokens[index] = message, count_message(message)
                    repairs.append((fixed or text, tokens[index], thread_id, seq))
        if repairs:
            self._repair(db, repairs)
        return messages, tokens

    def _repair(self, db: sqlite3.Connection, repairs: list[tuple[str, int, str, int]]) -> None:
        """Write back rows of an older release, cleaned and counted, if the lock is free now.

        Messages never change once saved, so this is safe at any time; when another writer
        holds the lock it is simply left for a later load (which waits for no one).
        """
        db.execute("PRAGMA busy_timeout = 0")
        try:
            with immediate(db):
                db.executemany(
                    "UPDATE oracle_messages SET message = ?, tokens = ? "
                    "WHERE thread_id = ? AND seq = ?",
                    repairs,
                )
        except sqlite3.OperationalError:
            pass  # locked by another writer: counted again next time
        finally:
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")

    async def append(
        self,
        thread_id: str,
        *,
        base: int,
        messages: Sequence[Message] = (),
        loaded: Sequence[str] = (),
        run: RunRecord | None = None,
        lease: str | None = None,
        tokens: Sequence[int] | None = None,
    ) -> list[str]:
        thread_id = clean_text(thread_id)
        messages = list(messages)
        return await self._call(
            lambda db: self._append(db, thread_id, base, messages, loaded, run, lease, tokens)
        )

    def _append(
        self,
        db: sqlite3.Connection,
        thread_id: str,
        base: int,
        messages: list[Message],
        loaded: Sequence[str],
        run: RunRecord | None,
        lease: str | None,
        tokens: Sequence[int] | None = None,
    ) -> list[str]:
        # Clean and count before taking the write lock, so the lock is held briefly.
        rows = list(zip(*encode_messages(messages, tokens), strict=True))
        plugins = [clean_text(p) for p in loaded]
        record = None if run is None else to_json(run.to_json())
        now = self._clock()
        with immediate(db):
            db.execute(
                "INSERT INTO oracle_threads VALUES (?, ?, ?) "
                "ON CONFLICT (thread_id) DO UPDATE SET updated_at = excluded.updated_at",
                (thread_id, now, now),
            )
            if rows:
                (count,) = db.execute(
                    "SELECT coalesce(max(seq) + 1, 0) FROM oracle_messages WHERE thread_id = ?",
                    (thread_id,),
                ).fetchone()
                if count != base:
                    raise conflict(thread_id, base, count)
                db.executemany(
                    "INSERT INTO oracle_messages (thread_id, seq, message, tokens) "
                    "VALUES (?, ?, ?, ?)",
                    [(thread_id, base + i, text, n) for i, (text, n) in enumerate(rows)],
                )
            for plugin in plugins:
                db.execute(
                    "INSERT OR IGNORE INTO oracle_loaded_plugins SELECT ?, ?, "
                    "coalesce(max(seq), -1) + 1 FROM oracle_loaded_plugins WHERE thread_id = ?",
                    (thread_id, plugin, thread_id),
                )
            if record is not None:
                text, saved = record
                db.execute(
                    "INSERT INTO oracle_runs (run_id, thread_id, created_at, record, status) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
                    "record = excluded.record, status = excluded.status",
                    (saved["id"], thread_id, saved["created_at"], text, saved["status"]),
                )
            if lease is not None:
                db.execute(
                    "UPDATE oracle_leases SET expires_at = ? + ttl "
                    "WHERE thread_id = ? AND owner = ?",
                    (now, thread_id, clean_text(lease)),
                )
            merged = db.execute(
                "SELECT plugin FROM oracle_loaded_plugins WHERE thread_id = ? ORDER BY seq",
                (thread_id,),
            ).fetchall()
        return [r[0] for r in merged]

    async def threads(self) -> list[str]:
        rows = await self._read(
            lambda db: db.execute(
                "SELECT thread_id FROM oracle_threads ORDER BY updated_at DESC"
            ).fetchall()
        )
        return [r[0] for r in rows]

    async def thread_summaries(self, *, limit: int | None = None) -> list[ThreadSummary]:
        query = (
            "SELECT t.thread_id, t.created_at, t.updated_at,"
            " (SELECT count(*) FROM oracle_messages m WHERE m.thread_id = t.thread_id),"
            " (SELECT coalesce(sum(m.tokens), 0) FROM oracle_messages m"
            "  WHERE m.thread_id = t.thread_id),"
            " (SELECT count(*) FROM oracle_runs r WHERE r.thread_id = t.thread_id)"
            " FROM oracle_threads t ORDER BY t.updated_at DESC LIMIT ?"
        )
        rows = await self._read(lambda db: db.execute(query, (limit or -1,)).fetchall())
        return [ThreadSummary(*row) for row in rows]

    async def delete(self, thread_id: str) -> bool:
        thread_id = clean_text(thread_id)

        def remove(db: sqlite3.Connection) -> bool:
            with immediate(db):
                found = db.execute(
                    "DELETE FROM oracle_threads WHERE thread_id = ?", (thread_id,)
                ).rowcount
                for table in _THREAD_TABLES:
                    db.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
            return found > 0

        return await self._call(remove)

    async def acquire(self, thread_id: str, owner: str, ttl: float) -> bool:
        check_ttl(ttl)
        thread_id, owner = clean_text(thread_id), clean_text(owner)

        def take(db: sqlite3.Connection) -> bool:
            now = self._clock()
            with immediate(db):
                taken = self._take(db, thread_id, owner, ttl, now)
            return taken

        return await self._call(take)

    def _take(
        self, db: sqlite3.Connection, thread_id: str, owner: str, ttl: float, now: float
    ) -> bool:
        held = db.execute(
            "SELECT owner, expires_at FROM oracle_leases WHERE thread_id = ?", (thread_id,)
        ).fetchone()
        renewal = held is not None and held[0] == owner
        free = held is None or held[1] <= now
        if renewal or (free and not self._queued_before(db, thread_id, owner, now)):
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

    def _queued_before(
        self, db: sqlite3.Connection, thread_id: str, owner: str, now: float
    ) -> bool:
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

    async def release(self, thread_id: str, owner: str) -> None:
        thread_id, owner = clean_text(thread_id), clean_text(owner)
        await self._call(
            lambda db: db.execute(
                "DELETE FROM oracle_leases WHERE thread_id = ? AND owner = ?", (thread_id, owner)
            )
        )

    async def mark_interrupted(self, thread_id: str | None = None) -> list[str]:
        only = None if thread_id is None else clean_text(thread_id)

        def stale(db: sqlite3.Connection, now: float) -> list[tuple[str, str]]:
            rows: list[tuple[str, str]] = db.execute(
                "SELECT run_id, record FROM oracle_runs AS r "
                "WHERE status = 'running' AND (? IS NULL OR thread_id = ?) AND NOT EXISTS "
                "(SELECT 1 FROM oracle_leases AS l "
                " WHERE l.thread_id = r.thread_id AND l.expires_at > ?) "
                "ORDER BY created_at, rowid",
                (only, only, now),
            ).fetchall()
            return rows

        def mark(db: sqlite3.Connection) -> list[str]:
            if not stale(db, self._clock()):
                return []  # the common case takes no write lock
            with immediate(db):
                now = self._clock()
                rows = stale(db, now)  # again, under the lock: a lease may have been taken
                for run_id, text in rows:
                    record = RunRecord.from_json(_from_json(text)[0])
                    record = interrupted(record, now)
                    db.execute(
                        "UPDATE oracle_runs SET record = ?, status = ? WHERE run_id = ?",
                        (to_json(record.to_json())[0], record.status, run_id),
                    )
            return [run_id for run_id, _ in rows]

        return await self._call(mark)

    async def save_credential(self, plugin: str, name: str, user_id: str, sealed: str) -> None:
        key = credential_key(plugin, name, user_id)
        await self._call(lambda db: credential_sql.save(db, key, sealed, self._clock()))

    async def load_credential(
        self, plugin: str, name: str, user_id: str
    ) -> CredentialRecord | None:
        key = credential_key(plugin, name, user_id)
        return await self._read(lambda db: credential_sql.load(db, key))

    async def delete_credential(self, plugin: str, name: str, user_id: str) -> bool:
        key = credential_key(plugin, name, user_id)
        return await self._call(lambda db: credential_sql.delete(db, key))

    async def credentials(
        self, *, plugin: str | None = None, user_id: str | None = None
    ) -> list[CredentialRecord]:
        return await self._read(lambda db: credential_sql.listing(db, plugin, user_id))

    # -- operations: every change a compare-and-set under the write lock (sqlite_operations)

    async def insert_operation(self, operation: Operation) -> None:
        await self._call(lambda db: operation_sql.insert(db, operation))

    async def get_operation(self, operation_id: str) -> Operation | None:
        return await self._call(lambda db: operation_sql.get(db, operation_id, self._clock()))

    async def list_operations(
        self,
        *,
        thread_id: str | None = None,
        status: str | None = None,
        run_id: str | None = None,
        kind: str | None = None,
        limit: int = 1000,
    ) -> list[Operation]:
        def select(db: sqlite3.Connection, write: bool) -> list[Operation] | None:
            return operation_sql.select(
                db,
                self._clock(),
                thread_id=thread_id,
                status=status,
                run_id=run_id,
                kind=kind,
                limit=limit,
                write=write,
            )

        # Read on the read connection (it waits for no writer); settle on the writer.
        found = await self._read(lambda db: select(db, False))
        if found is None:
            found = await self._call(lambda db: select(db, True))
        assert found is not None
        return found

    async def update_operation(
        self,
        operation_id: str,
        *,
        expect: Collection[str],
        status: str,
        reason: str | None = None,
        result: str | None = None,
        error: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> tuple[Operation, bool]:
        request = Update(operation_id, expect, status, reason, result, error, details)
        return await self._call(lambda db: operation_sql.update(db, request, self._clock()))

    async def claim_operation(self, operation_id: str, owner: str) -> Operation | None:
        return await self._call(
            lambda db: operation_sql.claim(db, operation_id, owner, self._clock())
        )

    async def finish_operation(
        self, operation_id: str, owner: str, outcome: Mapping[str, Any]
    ) -> bool:
        return await self._call(
            lambda db: operation_sql.finish(db, operation_id, owner, outcome, self._clock())
        )

    async def close(self) -> None:
        if self._closed:
            return

        def shut() -> None:
            with self._lock:
                self._closed = True
                if self._db is not None:
                    self._db.close()
                    self._db = None

        def shut_reader() -> None:
            with self._read_lock:
                if self._reader_db is not None:
                    self._reader_db.close()
                    self._reader_db = None

        # On the workers, after every call already made.
        await asyncio.get_running_loop().run_in_executor(self._worker, shut)
        await asyncio.get_running_loop().run_in_executor(self._reader, shut_reader)
        self._worker.shutdown(wait=False)
        self._reader.shutdown(wait=False)
