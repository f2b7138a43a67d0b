"""The embedded default checkpointer: one SQLite file (stdlib ``sqlite3``, WAL mode).

Each facet's SQL has a module of its own (:mod:`.threads`, :mod:`.runs`, :mod:`.leases`,
:mod:`.operations`, :mod:`.credentials`, :mod:`.usage`); :mod:`.connection` runs it off the event loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from oracle_core.store.base import Checkpointer
from oracle_core.store.credentials import credential_key
from oracle_core.store.leases import check_ttl
from oracle_core.store.sqlite import credentials as credential_sql
from oracle_core.store.sqlite import leases as lease_sql
from oracle_core.store.sqlite import operations as operation_sql
from oracle_core.store.sqlite import runs as run_sql
from oracle_core.store.sqlite import threads as thread_sql
from oracle_core.store.sqlite import usage as usage_sql
from oracle_core.store.sqlite.connect import immediate
from oracle_core.store.sqlite.connection import Connections
from oracle_core.store.unavailable import StoreUnavailableError
from oracle_core.store.usage import Grouping, Spent, UsageEntry, UsageGroup
from oracle_core.values.credentials import CredentialRecord
from oracle_core.values.messages import Message
from oracle_core.values.operations import Operation, Update
from oracle_core.values.text import clean_text
from oracle_core.values.threads import RunRecord, ThreadState, ThreadSummary, ThreadTail


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
        self._db = Connections(self.path, busy_timeout)

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection, opened now if needed (for plugins keeping tables in the file).

        It is shared with the store's worker thread; a plugin that writes through it should
        prefer its own connection (:func:`~oracle_core.connect_sqlite`) so its transactions
        never interleave with the store's.
        """
        return self._db.writer()

    # -- threads and runs

    async def load(self, thread_id: str) -> ThreadState:
        thread_id = clean_text(thread_id)
        return await self._db.read(lambda db: thread_sql.load(db, thread_id, self.busy_timeout))

    async def load_tail(self, thread_id: str, since: int) -> ThreadTail:
        thread_id = clean_text(thread_id)
        return await self._db.read(
            lambda db: thread_sql.load_tail(db, thread_id, since, self.busy_timeout)
        )

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
        usage: Sequence[UsageEntry] = (),
    ) -> list[str]:
        thread_id = clean_text(thread_id)
        messages = list(messages)
        rows = usage_sql.rows(usage)
        return await self._db.write(
            lambda db: thread_sql.append(
                db,
                thread_id,
                self._clock(),
                base=base,
                messages=messages,
                loaded=loaded,
                run=run,
                lease=lease,
                tokens=tokens,
                also=(lambda: usage_sql.insert(db, rows)) if rows else None,
            )
        )

    async def threads(self) -> list[str]:
        return await self._db.read(thread_sql.listing)

    async def thread_summaries(self, *, limit: int | None = None) -> list[ThreadSummary]:
        return await self._db.read(lambda db: thread_sql.summaries(db, limit))

    async def delete(self, thread_id: str) -> bool:
        thread_id = clean_text(thread_id)
        return await self._db.write(lambda db: thread_sql.delete(db, thread_id))

    # -- leases

    async def acquire(self, thread_id: str, owner: str, ttl: float) -> bool:
        check_ttl(ttl)
        thread_id, owner = clean_text(thread_id), clean_text(owner)

        def take(db: sqlite3.Connection) -> bool:
            now = self._clock()
            with immediate(db):
                return lease_sql.take(db, thread_id, owner, ttl, now)

        return await self._db.write(take)

    async def release(self, thread_id: str, owner: str) -> None:
        thread_id, owner = clean_text(thread_id), clean_text(owner)
        await self._db.write(lambda db: lease_sql.release(db, thread_id, owner))

    async def mark_interrupted(self, thread_id: str | None = None) -> list[str]:
        only = None if thread_id is None else clean_text(thread_id)
        return await self._db.write(lambda db: run_sql.mark_interrupted(db, only, self._clock))

    async def cut_off_runs(self) -> list[RunRecord]:
        return await self._db.read(lambda db: run_sql.cut_off(db, self._clock()))

    # -- credentials

    async def save_credential(self, plugin: str, name: str, user_id: str, sealed: str) -> None:
        key = credential_key(plugin, name, user_id)
        await self._db.write(lambda db: credential_sql.save(db, key, sealed, self._clock()))

    async def load_credential(
        self, plugin: str, name: str, user_id: str
    ) -> CredentialRecord | None:
        key = credential_key(plugin, name, user_id)
        return await self._db.read(lambda db: credential_sql.load(db, key))

    async def delete_credential(self, plugin: str, name: str, user_id: str) -> bool:
        key = credential_key(plugin, name, user_id)
        return await self._db.write(lambda db: credential_sql.delete(db, key))

    async def credentials(
        self, *, plugin: str | None = None, user_id: str | None = None
    ) -> list[CredentialRecord]:
        return await self._db.read(lambda db: credential_sql.listing(db, plugin, user_id))

    # -- usage

    async def record_usage(self, entries: Sequence[UsageEntry]) -> None:
        entries = list(entries)
        if entries:
            await self._db.write(lambda db: usage_sql.record(db, entries))

    async def usage(
        self, *, user_id: str | None = None, since: float | None = None
    ) -> list[UsageEntry]:
        return await self._db.read(lambda db: usage_sql.select(db, user_id, since))

    async def usage_summary(
        self, *, by: Grouping, user_id: str | None = None, since: float | None = None
    ) -> tuple[list[UsageGroup], UsageGroup]:
        return await self._db.read(lambda db: usage_sql.summary(db, by, user_id, since))

    async def spent(
        self, *, since: float, user_id: str | None = None, thread_id: str | None = None
    ) -> Spent:
        return await self._db.read(lambda db: usage_sql.spent(db, since, user_id, thread_id))

    # -- operations: every change a compare-and-set under the write lock (.operations)

    async def insert_operation(self, operation: Operation) -> None:
        await self._db.write(lambda db: operation_sql.insert(db, operation))

    async def get_operation(self, operation_id: str) -> Operation | None:
        return await self._db.write(lambda db: operation_sql.get(db, operation_id, self._clock()))

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
        found = await self._db.read(lambda db: select(db, False))
        if found is None:
            found = await self._db.write(lambda db: select(db, True))
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
        return await self._db.write(lambda db: operation_sql.update(db, request, self._clock()))

    async def claim_operation(self, operation_id: str, owner: str) -> Operation | None:
        return await self._db.write(
            lambda db: operation_sql.claim(db, operation_id, owner, self._clock())
        )

    async def finish_operation(
        self, operation_id: str, owner: str, outcome: Mapping[str, Any]
    ) -> bool:
        return await self._db.write(
            lambda db: operation_sql.finish(db, operation_id, owner, outcome, self._clock())
        )

    async def ping(self, within: float = 5.0) -> None:
        """Open the file (created and migrated if needed) and read from it.

        Raises:
            StoreUnavailableError: the file or its folder under ``ORACLE_HOME`` cannot be
                made or read, or no answer comes within ``within`` seconds.
        """
        try:
            async with asyncio.timeout(within):
                await self._db.read(lambda db: db.execute("SELECT 1").fetchone())
        except TimeoutError:
            raise StoreUnavailableError(
                f"ORACLE_HOME: the database {self.path} did not answer within {within:g} s "
                "(another process may hold it locked); try again, or set ORACLE_HOME to a "
                "folder of its own",
                variable="ORACLE_HOME",
            ) from None
        except sqlite3.DatabaseError as error:
            raise StoreUnavailableError(
                f"ORACLE_HOME: the database {self.path} cannot be read ({error}); move it "
                "away to start a new one, or set ORACLE_HOME to another folder",
                variable="ORACLE_HOME",
            ) from None

    async def close(self) -> None:
        await self._db.close()
