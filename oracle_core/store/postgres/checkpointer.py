"""The Postgres checkpointer: many server processes, on many machines, sharing one database.

psycopg 3 with an async connection pool (``oracle-core-runtime[postgres]``). The pool is here; each
facet's SQL has a module of its own (:mod:`.threads`, :mod:`.leases`, :mod:`.operations`,
:mod:`.credentials`, :mod:`.usage`). The schema is created or migrated by the first call (see :mod:`.schema`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from oracle_core.store.base import Checkpointer
from oracle_core.store.credentials import credential_key
from oracle_core.store.leases import check_ttl
from oracle_core.store.postgres import credentials as credential_sql
from oracle_core.store.postgres import leases as lease_sql
from oracle_core.store.postgres import operations as operation_sql
from oracle_core.store.postgres import schema as migrations
from oracle_core.store.postgres import threads as thread_sql
from oracle_core.store.postgres import usage as usage_sql
from oracle_core.store.postgres.notify import NotifyChannel
from oracle_core.store.saving import encode_messages, to_json
from oracle_core.store.unavailable import postgres_unreachable
from oracle_core.store.usage import Grouping, Spent, UsageEntry, UsageGroup
from oracle_core.values.credentials import CredentialRecord
from oracle_core.values.messages import Message
from oracle_core.values.operations import Operation, Update
from oracle_core.values.text import clean_text
from oracle_core.values.threads import RunRecord, ThreadState, ThreadSummary, ThreadTail

T = TypeVar("T")
log = logging.getLogger("oracle_core.store")
Connection = psycopg.AsyncConnection[TupleRow]

DEFAULT_POOL_SIZE = 10
"""Connections one store (one process) may open at most."""

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def with_schema(schema: str) -> dict[str, Any]:
    """Connection keywords that put the store's tables in Postgres schema ``schema``.

    Raises:
        ValueError: when ``schema`` is not a plain identifier (letters, digits, ``_``).
    """
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ValueError(
            f"Postgres schema name {schema[:80]!r} is not a plain identifier: use up to 63 "
            "letters, digits and underscores, not starting with a digit"
        )
    return {"options": f"-c search_path={schema}"}


class PostgresCheckpointer(Checkpointer):
    """Stores threads in Postgres; any number of processes may share the database.

    Args:
        url: a libpq connection string or ``postgresql://`` URL (``ORACLE_DATABASE_URL``).
        schema: the Postgres schema for the tables, created if missing; default the first
            schema of the connection's ``search_path`` (normally ``public``).
        pool_size: connections this store may open at most (``ORACLE_DATABASE_POOL_SIZE``).
        clock: the wall clock leases expire by; default the database's own clock, so every
            process agrees whatever its machine's clock says. Tests pass their own.
        connect_timeout: seconds to wait for a connection from the pool.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        pool_size: int = DEFAULT_POOL_SIZE,
        clock: Callable[[], float] | None = None,
        connect_timeout: float = 30.0,
    ) -> None:
        if pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, not {pool_size!r}")
        self.url = url
        self.schema = schema
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        self._clock = clock
        self.application_name = f"oracle-{uuid.uuid4().hex[:12]}"
        """The ``application_name`` of the pool's connections (``pg_stat_activity``)."""
        self._kwargs: dict[str, Any] = {
            "autocommit": True,
            "application_name": self.application_name,
        }
        if schema is not None:
            self._kwargs.update(with_schema(schema))
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._opening: asyncio.Lock | None = None
        self._closed = False
        self.current_schema: str | None = None
        """The Postgres schema the tables are in, known once the pool is open."""
        self._channel = NotifyChannel(self)

    # -- connections ---------------------------------------------------------------------------

    @property
    def connection_kwargs(self) -> dict[str, Any]:
        """Keywords every connection of the store is opened with (autocommit, search_path)."""
        return dict(self._kwargs)

    def _now(self) -> float | None:
        """The caller's time when a clock was given, else ``None`` (the database's time)."""
        return None if self._clock is None else self._clock()

    async def connect(self, **options: Any) -> Connection:
        """A new connection of the store's own (not from the pool), schema created first.

        Args:
            options: more connection keywords (e.g. ``application_name``).
        """
        if self.schema is not None:
            async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                await migrations.create_schema(conn, self.schema)
        return await psycopg.AsyncConnection.connect(self.url, **{**self._kwargs, **options})

    async def pool(self) -> AsyncConnectionPool[Connection]:
        """The pool, opened (and the schema migrated) by the first call."""
        if self._closed:
            raise RuntimeError(f"the Postgres store at {self._where()} is closed")
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                try:
                    conn = await self.connect()
                except psycopg.OperationalError as error:
                    raise postgres_unreachable(self._address(), error) from None
                async with conn:
                    await migrations.upgrade(conn)
                    self.current_schema = (await migrations.status(conn)).schema
                pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self.pool_size,
                    kwargs=self._kwargs,
                    timeout=self.connect_timeout,
                    open=False,
                    name="oracle",
                )
                await pool.open(wait=True, timeout=self.connect_timeout)
                self._pool = pool
        return self._pool

    async def _call(self, work: Callable[[Connection], Awaitable[T]]) -> T:
        """Run ``work`` on a pooled connection; once more on another if that one was broken.

        A connection breaks when the server restarts or a proxy drops it; the pool discards
        it. Trying again is safe for every call: reads and upserts are idempotent, and an
        append whose first try did commit finds the thread moved on and raises a conflict
        instead of saving its messages twice.
        """
        pool = await self.pool()
        for attempt in (1, 2):
            async with pool.connection() as conn:
                try:
                    return await work(conn)
                except psycopg.OperationalError as error:
                    if attempt == 2 or not conn.broken:
                        raise
                    log.warning("a Postgres connection broke (%s); trying another", error)
        raise AssertionError("unreachable")

    async def ping(self, within: float = 5.0) -> None:
        """Open the pool (the schema migrated) if needed, and ask the database ``SELECT 1``.

        Raises:
            StoreUnavailableError: Postgres refuses, breaks or does not answer within
                ``within`` seconds, naming its address (never the password) and the fix.
        """
        try:
            async with asyncio.timeout(within):
                pool = await self.pool()
                async with pool.connection(timeout=within) as conn:
                    await conn.execute("SELECT 1")
        except TimeoutError:
            reason = TimeoutError(f"no answer within {within:g} s")
            raise postgres_unreachable(self._address(), reason) from None
        except (psycopg.Error, PoolTimeout) as error:
            raise postgres_unreachable(self._address(), error) from None

    def _address(self) -> str:
        """host:port/database of :attr:`url`, never its password."""
        from urllib.parse import urlsplit

        if "://" not in self.url:  # a libpq "host=... dbname=..." string
            return "the address of ORACLE_DATABASE_URL"
        try:
            parts = urlsplit(self.url)
            return f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path}"
        except ValueError:
            return "ORACLE_DATABASE_URL"

    def _where(self) -> str:
        return f"schema {self.schema!r}" if self.schema else "ORACLE_DATABASE_URL"

    @property
    def events(self) -> NotifyChannel:
        """Run events through ``LISTEN``/``NOTIFY``: followers see every process's runs."""
        return self._channel

    # -- threads and runs ----------------------------------------------------------------------

    async def load(self, thread_id: str) -> ThreadState:
        thread_id = clean_text(thread_id)
        return await self._call(lambda conn: thread_sql.load(conn, thread_id))

    async def load_tail(self, thread_id: str, since: int) -> ThreadTail:
        thread_id = clean_text(thread_id)
        return await self._call(lambda conn: thread_sql.load_tail(conn, thread_id, since))

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
        rows = await asyncio.to_thread(encode_messages, messages, tokens) if messages else ([], [])
        args = thread_sql.append_arguments(
            thread_id,
            base=base,
            rows=rows,
            loaded=loaded,
            record=None if run is None else to_json(run.to_json()),
            lease=lease,
            now=self._now(),
        )
        entries = list(usage)
        if not entries:
            return await self._call(lambda conn: thread_sql.append(conn, thread_id, base, args))

        async def step(conn: Connection) -> list[str]:  # the step and its usage rows, at once
            async with conn.transaction():
                merged = await thread_sql.append(conn, thread_id, base, args)
                await usage_sql.insert(conn, entries)
            return merged

        return await self._call(step)

    async def threads(self) -> list[str]:
        return await self._call(thread_sql.listing)

    async def thread_summaries(self, *, limit: int | None = None) -> list[ThreadSummary]:
        return await self._call(lambda conn: thread_sql.summaries(conn, limit))

    async def delete(self, thread_id: str) -> bool:
        thread_id = clean_text(thread_id)
        return await self._call(lambda conn: thread_sql.delete(conn, thread_id))

    # -- leases ----------------------------------------------------------------------------------

    async def acquire(self, thread_id: str, owner: str, ttl: float) -> bool:
        check_ttl(ttl)
        thread_id, owner, now = clean_text(thread_id), clean_text(owner), self._now()
        return await self._call(lambda conn: lease_sql.acquire(conn, thread_id, owner, ttl, now))

    async def release(self, thread_id: str, owner: str) -> None:
        thread_id, owner = clean_text(thread_id), clean_text(owner)
        await self._call(lambda conn: lease_sql.release(conn, thread_id, owner))

    async def mark_interrupted(self, thread_id: str | None = None) -> list[str]:
        only = None if thread_id is None else clean_text(thread_id)
        return await self._call(lambda conn: lease_sql.mark_interrupted(conn, only, self._now()))

    async def cut_off_runs(self) -> list[RunRecord]:
        return await self._call(lambda conn: lease_sql.cut_off(conn, self._now()))

    # -- credentials -----------------------------------------------------------------------------

    async def save_credential(self, plugin: str, name: str, user_id: str, sealed: str) -> None:
        key = credential_key(plugin, name, user_id)
        now = self._now()
        await self._call(lambda conn: credential_sql.save(conn, key, sealed, now))

    async def load_credential(
        self, plugin: str, name: str, user_id: str
    ) -> CredentialRecord | None:
        key = credential_key(plugin, name, user_id)
        return await self._call(lambda conn: credential_sql.load(conn, key))

    async def delete_credential(self, plugin: str, name: str, user_id: str) -> bool:
        key = credential_key(plugin, name, user_id)
        return await self._call(lambda conn: credential_sql.delete(conn, key))

    async def credentials(
        self, *, plugin: str | None = None, user_id: str | None = None
    ) -> list[CredentialRecord]:
        plugin = None if plugin is None else clean_text(plugin)
        user_id = None if user_id is None else clean_text(user_id)
        return await self._call(lambda conn: credential_sql.listing(conn, plugin, user_id))

    # -- usage -------------------------------------------------------------------------------

    async def record_usage(self, entries: Sequence[UsageEntry]) -> None:
        entries = list(entries)
        if entries:
            await self._call(lambda conn: usage_sql.record(conn, entries))

    async def usage(
        self, *, user_id: str | None = None, since: float | None = None
    ) -> list[UsageEntry]:
        return await self._call(lambda conn: usage_sql.select(conn, user_id, since))

    async def usage_summary(
        self, *, by: Grouping, user_id: str | None = None, since: float | None = None
    ) -> tuple[list[UsageGroup], UsageGroup]:
        return await self._call(lambda conn: usage_sql.summary(conn, by, user_id, since))

    async def spent(
        self, *, since: float, user_id: str | None = None, thread_id: str | None = None
    ) -> Spent:
        return await self._call(lambda conn: usage_sql.spent(conn, since, user_id, thread_id))

    # -- operations: every change a compare-and-set on a locked row (postgres/operations.py)

    async def insert_operation(self, operation: Operation) -> None:
        await self._call(lambda conn: operation_sql.insert(conn, operation))

    async def get_operation(self, operation_id: str) -> Operation | None:
        now = self._now()
        return await self._call(lambda conn: operation_sql.get(conn, operation_id, now))

    async def list_operations(
        self,
        *,
        thread_id: str | None = None,
        status: str | None = None,
        run_id: str | None = None,
        kind: str | None = None,
        limit: int = 1000,
    ) -> list[Operation]:
        now = self._now()
        return await self._call(
            lambda conn: operation_sql.select(
                conn,
                now,
                thread_id=thread_id,
                status=status,
                run_id=run_id,
                kind=kind,
                limit=limit,
            )
        )

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
        now = self._now()
        return await self._call(lambda conn: operation_sql.update(conn, request, now))

    async def claim_operation(self, operation_id: str, owner: str) -> Operation | None:
        now = self._now()
        return await self._call(lambda conn: operation_sql.claim(conn, operation_id, owner, now))

    async def finish_operation(
        self, operation_id: str, owner: str, outcome: Mapping[str, Any]
    ) -> bool:
        now = self._now()
        return await self._call(
            lambda conn: operation_sql.finish(conn, operation_id, owner, outcome, now)
        )

    async def close(self) -> None:
        if self._closed:
            return
        await self._channel.close()  # first: it sends what is still in its outbox
        self._closed = True
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
