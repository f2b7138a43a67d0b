"""Run events across processes: ``NOTIFY`` from the process running, ``LISTEN`` where followed.

Publishing never waits: events go to an outbox that one sender task per store empties.
Each thread has its own channel (a hash of the store's schema and the thread id), and a
process that follows a thread registers the channel in ``oracle_followers`` (renewed while
it listens), so the sender first asks which of its batch's channels anyone follows — one
cheap read — and notifies only those: runs nobody follows cost no ``NOTIFY`` (whose commit
takes a database-wide lock). A thread's consecutive events are packed into as few
notifications as fit Postgres' payload limit, in one transaction, so they arrive in order;
an event larger than the limit is kept in ``oracle_event_payloads`` and its notification
carries only the row's id. One connection per process listens, opened by its first follower.

Delivery is as good as ``LISTEN``/``NOTIFY``'s: a follower sees every event published once
it is subscribed, unless its listening connection drops (it reconnects and listens again;
what was sent meanwhile is missed) or it falls
:data:`~oracle_core.store.events.FOLLOWER_BACKLOG` events behind.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import json
import logging
import uuid
from typing import Any, Protocol

import psycopg
import psycopg_pool
from psycopg import sql

from oracle_core.store.events import EventChannel, Follower, Publishable
from oracle_core.values.text import clean_text


class NotifyStore(Protocol):
    """What the channel needs of the Postgres store (which satisfies it)."""

    @property
    def current_schema(self) -> str | None:
        """The schema the store's tables live in, once its pool is open."""

    async def pool(self) -> psycopg_pool.AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
        """The store's connection pool, opened (and the schema migrated) on first need."""

    async def connect(self, **options: Any) -> psycopg.AsyncConnection[Any]:
        """A connection of its own, outside the pool (for LISTEN)."""


log = logging.getLogger("oracle_core.store")

PAYLOAD_LIMIT = 7_900
"""Bytes of one notification's payload (Postgres allows just under 8000)."""

POLL_SECONDS = 0.1
"""How long the listener waits for notifications before it turns to new subscriptions."""

PAYLOAD_KEEP_SECONDS = 600.0
"""How long an oversized event's row is kept for followers to fetch."""

FOLLOWER_RENEW_SECONDS = 30.0
"""How often a listening process renews its registrations in ``oracle_followers``."""

FOLLOWER_LIVENESS = 120.0
"""Seconds a registration counts after its last renewal (a dead process's ones lapse)."""

MIGRATION = """
CREATE TABLE oracle_followers (
    channel text NOT NULL,
    listener text NOT NULL,
    seen_at double precision NOT NULL,
    PRIMARY KEY (channel, listener)
);
"""
"""The channels followed, by which listening connection (migration 4)."""

_FOLLOWED = (
    "SELECT DISTINCT channel FROM oracle_followers "
    "WHERE channel = ANY(%s) AND seen_at > oracle_now(NULL) - %s"
)


class NotifyChannel(EventChannel):
    """The Postgres store's :class:`~oracle_core.store.events.EventChannel`.

    Args:
        store: the store whose database carries the notifications.
    """

    def __init__(self, store: NotifyStore) -> None:
        super().__init__()
        self._store = store
        self._outbox: list[tuple[str, str]] = []
        self._wake: asyncio.Event | None = None
        self._sender: asyncio.Task[None] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._commands: collections.deque[tuple[str, str, asyncio.Future[None]]] = (
            collections.deque()
        )
        self._listening: dict[str, asyncio.Future[None]] = {}
        self._names: dict[str, str] = {}  # channel name -> thread id
        self._listener = uuid.uuid4().hex
        self.application_name = f"oracle-listener-{self._listener[:12]}"
        """The ``application_name`` of the listening connection (``pg_stat_activity``)."""
        self._closed = False

    def name(self, thread_id: str) -> str:
        """The notification channel of ``thread_id`` (cleaned) in this store's schema.

        Call it once the store's pool is open (its schema is known then).
        """
        seed = f"{self._store.current_schema}\x00{thread_id}".encode()
        return "oracle_" + hashlib.sha256(seed).hexdigest()[:40]

    # -- publishing ------------------------------------------------------------------------------

    def publish(self, thread_id: str, event: Publishable) -> None:
        if self._closed:
            return
        text = json.dumps(event.to_json(), ensure_ascii=False, separators=(",", ":"))
        self._outbox.append((clean_text(thread_id), clean_text(text)))
        if self._sender is None or self._sender.done():
            self._wake = asyncio.Event()
            self._sender = asyncio.create_task(self._send(), name="oracle-notify-sender")
        assert self._wake is not None
        self._wake.set()

    async def _send(self) -> None:
        assert self._wake is not None
        wake = self._wake
        while True:
            await wake.wait()
            wake.clear()
            batch, self._outbox = self._outbox, []
            if batch:
                try:
                    await self._notify(batch)
                except Exception:  # a follower misses these; the run goes on regardless
                    log.warning("could not publish %d run events", len(batch), exc_info=True)
            if self._closed and not self._outbox:
                return

    async def _notify(self, batch: list[tuple[str, str]]) -> None:
        pool = await self._store.pool()  # first: the schema names the channels
        named = [(self.name(thread_id), text) for thread_id, text in batch]
        async with pool.connection() as conn:
            cursor = await conn.execute(
                _FOLLOWED, (sorted({n for n, _ in named}), FOLLOWER_LIVENESS)
            )
            followed = {row[0] for row in await cursor.fetchall()}
            named = [(n, text) for n, text in named if n in followed]
            if not named:
                return  # nobody follows these threads anywhere
            async with conn.transaction():
                payloads = await self._pack(conn, named)
                async with conn.cursor() as notifying:
                    await notifying.executemany("SELECT pg_notify(%s, %s)", payloads)

    async def _pack(
        self, conn: psycopg.AsyncConnection[Any], named: list[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        """Notification payloads for ``named`` events, in order (oversized ones kept in rows)."""
        payloads: list[tuple[str, str]] = []
        merging = True  # whether the last payload is an array more events may join
        kept = False
        for name, text in named:
            size = len(text.encode())
            if size + 2 > PAYLOAD_LIMIT:
                cursor = await conn.execute(
                    "INSERT INTO oracle_event_payloads (created_at, payload) "
                    "VALUES (oracle_now(NULL), %s) RETURNING id",
                    (text,),
                )
                row = await cursor.fetchone()
                assert row is not None
                payloads.append((name, json.dumps({"ref": row[0]})))
                merging, kept = False, True
                continue
            last = payloads[-1] if payloads and merging else None
            if last and last[0] == name and len(last[1].encode()) + size + 1 <= PAYLOAD_LIMIT:
                payloads[-1] = (name, last[1][:-1] + "," + text + "]")
            else:
                payloads.append((name, "[" + text + "]"))
            merging = True
        if kept:
            await conn.execute(
                "DELETE FROM oracle_event_payloads WHERE created_at < oracle_now(NULL) - %s",
                (PAYLOAD_KEEP_SECONDS,),
            )
        return payloads

    # -- following -----------------------------------------------------------------------------

    async def _added(self, follower: Follower) -> None:
        await self._store.pool()  # the schema, which names the channel, is known then
        await super()._added(follower)
        name = self.name(follower.thread_id)
        self._names[name] = follower.thread_id
        listening = self._listening.get(name)
        if listening is None:
            listening = self._command("LISTEN", name)
            self._listening[name] = listening
        try:
            await asyncio.shield(listening)
        except BaseException:
            await self._removed(follower)
            raise

    async def _removed(self, follower: Follower) -> None:
        await super()._removed(follower)
        if self.following(follower.thread_id):
            return
        name = self.name(follower.thread_id)
        if self._listening.pop(name, None) is not None and not self._closed:
            self._command("UNLISTEN", name)  # not waited for: it only stops deliveries
        self._names.pop(name, None)

    def _command(self, verb: str, name: str) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._commands.append((verb, name, done))
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._listen(), name="oracle-notify-listener")
        return done

    async def _listen(self) -> None:
        """Keep one listening connection, reconnecting (and listening again) when it drops."""
        while not self._closed:
            try:
                async with await self._store.connect(
                    application_name=self.application_name
                ) as conn:
                    for name, listening in list(self._listening.items()):  # after a reconnect
                        if listening.done():
                            await self._run(conn, "LISTEN", name)
                    await self._serve(conn)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("the Postgres event listener dropped (%s); reconnecting", error)
                for _, _, done in self._commands:
                    if not done.done():
                        done.set_exception(error)
                self._commands.clear()
                await asyncio.sleep(1.0)

    async def _run(self, conn: psycopg.AsyncConnection[Any], verb: str, name: str) -> None:
        """``LISTEN`` or ``UNLISTEN`` ``name``, registering or forgetting it as followed."""
        await conn.execute(sql.SQL(verb + " {}").format(sql.Identifier(name)))
        if verb == "LISTEN":
            await conn.execute(
                "INSERT INTO oracle_followers VALUES (%s, %s, oracle_now(NULL)) "
                "ON CONFLICT (channel, listener) DO UPDATE SET seen_at = excluded.seen_at",
                (name, self._listener),
            )
        else:
            await conn.execute(
                "DELETE FROM oracle_followers WHERE channel = %s AND listener = %s",
                (name, self._listener),
            )

    async def _serve(self, conn: psycopg.AsyncConnection[Any]) -> None:
        loop = asyncio.get_running_loop()
        renew_at = loop.time() + FOLLOWER_RENEW_SECONDS
        while not self._closed:
            while self._commands:
                verb, name, done = self._commands.popleft()
                await self._run(conn, verb, name)
                if not done.done():
                    done.set_result(None)
            if loop.time() >= renew_at:
                renew_at = loop.time() + FOLLOWER_RENEW_SECONDS
                await conn.execute(
                    "UPDATE oracle_followers SET seen_at = oracle_now(NULL) WHERE listener = %s",
                    (self._listener,),
                )
                await conn.execute(  # what dead processes left
                    "DELETE FROM oracle_followers WHERE seen_at < oracle_now(NULL) - %s",
                    (FOLLOWER_LIVENESS * 2,),
                )
            async for notice in conn.notifies(timeout=POLL_SECONDS):
                await self._dispatch(notice.channel, notice.payload)

    async def _dispatch(self, name: str, payload: str) -> None:
        thread_id = self._names.get(name)
        if thread_id is None:
            return
        try:
            data = json.loads(payload)
            if isinstance(data, dict):  # an oversized event, kept in a row
                data = [await self._fetch(int(data["ref"]))]
        except Exception:
            log.warning("a run event for thread %r could not be read", thread_id, exc_info=True)
            return
        for event in data:
            if isinstance(event, dict):
                self.deliver(thread_id, event)

    async def _fetch(self, ref: int) -> Any:
        pool = await self._store.pool()
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT payload FROM oracle_event_payloads WHERE id = %s", (ref,)
            )
            row = await cursor.fetchone()
        return json.loads(row[0]) if row else None

    async def close(self) -> None:
        """Send what is still in the outbox, then stop listening (forgetting its channels)."""
        self._closed = True
        sender, reader = self._sender, self._reader
        if sender is not None and not sender.done():
            assert self._wake is not None
            self._wake.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(sender), timeout=10)
            sender.cancel()
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
            if self._store.current_schema is not None:
                with contextlib.suppress(Exception):
                    pool = await self._store.pool()
                    async with pool.connection() as conn:
                        await conn.execute(
                            "DELETE FROM oracle_followers WHERE listener = %s", (self._listener,)
                        )
