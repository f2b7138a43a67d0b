"""The Postgres checkpointer: many server processes, on many machines, sharing one database.

psycopg 3 with an async connection pool (``oracle-core[postgres]``). Each step is one call
of the ``oracle_append`` function (one round trip, one transaction: the thread's row is
locked first, so steps on a thread queue across processes); a load is one statement (one
snapshot); a lease is taken by ``oracle_acquire`` under a transaction advisory lock. The
schema is created or migrated by the first call (see :mod:`.schema`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from oracle_core.store.base import Checkpointer
from oracle_core.store.credentials import credential_key
from oracle_core.store.leases import WAITER_LIVENESS, check_ttl
from oracle_core.store.postgres import credentials as credential_sql
from oracle_core.store.postgres import operations as operation_sql
from oracle_core.store.postgres import schema as migrations
from oracle_core.store.postgres.codec import escape, thread_key, unescape
from oracle_core.store.postgres.notify import NotifyChannel
from oracle_core.store.saving import encode_messages, to_json
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
log = logging.getLogger("oracle_core.store")
Connection = psycopg.AsyncConnection[TupleRow]

DEFAULT_POOL_SIZE = 10
"""Connections one store (one process) may open at most."""

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
                async with await self.connect() as conn:
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

    def _where(self) -> str:
        return f"schema {self.schema!r}" if self.schema else "ORACLE_DATABASE_URL"

    @property
    def events(self) -> NotifyChannel:
        """Run events through ``LISTEN``/``NOTIFY``: followers see every process's runs."""
        return self._channel

    # -- threads -------------------------------------------------------------------------------

    async def load(self, thread_id: str) -> ThreadState:
        thread_id = clean_text(thread_id)
        text, tokens, _, loaded, runs = await self._read(thread_id, 0, running=False)
        return ThreadState(
            thread_id,
            messages=json.loads(f"[{text}]"),
            loaded_plugins=loaded,
            runs=runs,
            message_tokens=tokens,
        )

    async def load_tail(self, thread_id: str, since: int) -> ThreadTail:
        thread_id = clean_text(thread_id)
        since = max(0, since)
        # The row before the tail comes along, to check the caller's start; a past-the-end
        # ``since`` reads nothing (the count says why).
        text, tokens, count, loaded, running = await self._read(
            thread_id, since - 1 if since else 0, running=True
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

    async def _read(
        self, thread_id: str, first: int, *, running: bool
    ) -> tuple[str, list[int], int, list[str], list[RunRecord]]:
        async def read(conn: Connection) -> tuple[Any, ...] | None:
            cursor = await conn.execute(
                _READ, {"key": thread_key(thread_id), "first": first, "running": running}
            )
            return await cursor.fetchone()

        row = await self._call(read)
        assert row is not None
        text, tokens, count, loaded, runs = row
        return (
            text or "",
            list(tokens or []),
            int(count),
            [unescape(p) for p in loaded or []],
            [RunRecord.from_json(json.loads(r)) for r in runs or []],
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
    ) -> list[str]:
        thread_id = clean_text(thread_id)
        rows = await asyncio.to_thread(encode_messages, messages, tokens) if messages else ([], [])
        record = None if run is None else to_json(run.to_json())
        args = (
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
            self._now(),
        )

        async def save(conn: Connection) -> list[str]:
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

        return await self._call(save)

    async def threads(self) -> list[str]:
        async def read(conn: Connection) -> list[tuple[Any, ...]]:
            cursor = await conn.execute(
                "SELECT thread_id FROM oracle_threads ORDER BY updated_at DESC"
            )
            return await cursor.fetchall()

        return [unescape(r[0]) for r in await self._call(read)]

    async def thread_summaries(self, *, limit: int | None = None) -> list[ThreadSummary]:
        async def read(conn: Connection) -> list[tuple[Any, ...]]:
            cursor = await conn.execute(
                "SELECT t.thread_id, t.created_at, t.updated_at, "
                "(SELECT count(*) FROM oracle_messages m WHERE m.thread_key = t.thread_key), "
                "(SELECT coalesce(sum(tokens), 0) FROM oracle_messages m "
                " WHERE m.thread_key = t.thread_key), "
                "(SELECT count(*) FROM oracle_runs r WHERE r.thread_key = t.thread_key) "
                "FROM oracle_threads t ORDER BY t.updated_at DESC LIMIT %s",
                (limit,),
            )
            return await cursor.fetchall()

        return [
            ThreadSummary(
                unescape(r[0]),
                created_at=float(r[1]),
                updated_at=float(r[2]),
                messages=int(r[3]),
                tokens=int(r[4]),
                runs=int(r[5]),
            )
            for r in await self._call(read)
        ]

    async def delete(self, thread_id: str) -> bool:
        key = thread_key(clean_text(thread_id))

        async def remove(conn: Connection) -> bool:
            async with conn.transaction():
                cursor = await conn.execute(
                    "DELETE FROM oracle_threads WHERE thread_key = %s", (key,)
                )
                existed = cursor.rowcount > 0
                for table in _THREAD_TABLES:
                    await conn.execute(
                        f"DELETE FROM {table} WHERE thread_key = %s",
                        (key,),
                    )
            return existed

        return await self._call(remove)

    # -- leases ----------------------------------------------------------------------------------

    async def acquire(self, thread_id: str, owner: str, ttl: float) -> bool:
        check_ttl(ttl)
        args = (
            thread_key(clean_text(thread_id)),
            escape(clean_text(owner)),
            float(ttl),
            WAITER_LIVENESS,
            self._now(),
        )

        async def take(conn: Connection) -> bool:
            row = await (
                await conn.execute("SELECT oracle_acquire(%s, %s, %s, %s, %s)", args)
            ).fetchone()
            return bool(row and row[0])

        return await self._call(take)

    async def release(self, thread_id: str, owner: str) -> None:
        args = (thread_key(clean_text(thread_id)), escape(clean_text(owner)))

        async def give(conn: Connection) -> None:
            await conn.execute(
                "DELETE FROM oracle_leases WHERE thread_key = %s AND owner = %s", args
            )

        await self._call(give)

    async def mark_interrupted(self, thread_id: str | None = None) -> list[str]:
        key = None if thread_id is None else thread_key(clean_text(thread_id))
        live = (
            "NOT EXISTS (SELECT 1 FROM oracle_leases AS l WHERE l.thread_key = r.thread_key "
            "AND l.expires_at > oracle_now(%(now)s))"
        )

        async def mark(conn: Connection) -> list[str]:
            now = self._now()
            cursor = await conn.execute(
                "SELECT run_id, record FROM oracle_runs AS r WHERE status = 'running' "
                f"AND (%(key)s::bytea IS NULL OR thread_key = %(key)s) AND {live} "
                "ORDER BY created_at, ord",
                {"key": key, "now": now},
            )
            marked = []
            for run_id, text in await cursor.fetchall():
                record = RunRecord.from_json(json.loads(text))
                record = interrupted(record, now if now is not None else time.time())
                done = await conn.execute(
                    "UPDATE oracle_runs AS r SET record = %(record)s, status = 'interrupted' "
                    f"WHERE run_id = %(run)s AND status = 'running' AND {live}",
                    {"record": to_json(record.to_json())[0], "run": run_id, "now": now},
                )
                if done.rowcount:  # else a run took the thread (or ended) meanwhile
                    marked.append(unescape(run_id))
            return marked

        return await self._call(mark)

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


_THREAD_TABLES = ("oracle_messages", "oracle_loaded_plugins", "oracle_runs", "oracle_leases",
                  "oracle_lease_waiters", "oracle_operations")  # fmt: skip
"""Tables whose rows belong to one thread (by ``thread_key``), removed with it."""
