"""What only the Postgres store must show: odd thread ids, migrations, events across stores.

Each test has a Postgres schema of its own (the ``pg_schema`` fixture, dropped after); the
store-neutral promises are in the conformance suite (``test_checkpointers.py``).
"""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[postgres]'")

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from stores import KINDS, PgSchema, opener

from oracle_core import StoreSchemaError
from oracle_core.store import Checkpointer
from oracle_core.store.postgres import schema as migrations
from oracle_core.values.text import clean_text

PIECES = ["a", "\x00", "\\", "\\0", "\\\\", "0", "\ud83d", "\ude00", "é", "\u2028", "\x1b", " ",
          "'", '"', ";--", "%s", "$$", "\U0001f600"]  # fmt: skip


def odd_ids(seed: int, count: int) -> list[str]:
    """Thread ids built from pieces that break naive storage: NULs, escapes, quotes, halves."""
    rng = random.Random(seed)
    ids = {"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 10))) for _ in range(count)}
    ids |= {"x" * 300_000, "\x00" * 5_000, "é" * 2_000}  # past any index entry's size
    return sorted(ids)


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Checkpointer]:
    schema = request.getfixturevalue("pg_schema") if request.param == "postgres" else None
    opened = opener(request.param, tmp_path, lambda: 1_000_000.0, schema)()
    yield opened
    await opened.close()


async def test_odd_thread_ids_each_name_their_own_thread_in_every_store(
    store: Checkpointer,
) -> None:
    ids = odd_ids(7, 60)
    for index, thread_id in enumerate(ids):
        await store.append(thread_id, base=0, messages=[{"role": "user", "content": str(index)}],
                           loaded=[thread_id[:50]])  # fmt: skip
        assert await store.acquire(thread_id, thread_id[:50], ttl=30)

    cleaned = {clean_text(t): i for i, t in enumerate(ids)}
    assert sorted(await store.threads()) == sorted(cleaned)
    for thread_id, index in cleaned.items():
        state = await store.load(thread_id)
        assert state.thread_id == thread_id
        assert state.messages[-1]["content"] == str(index)  # the last id cleaning to it wins
        assert not await store.acquire(thread_id, "someone else", ttl=30)
    assert await store.delete(ids[0])
    assert clean_text(ids[0]) not in await store.threads()


async def test_processes_starting_at_once_apply_each_migration_once(pg_schema: PgSchema) -> None:
    stores = [pg_schema.store() for _ in range(5)]
    try:
        await asyncio.gather(*(s.threads() for s in stores))
    finally:
        for store in stores:
            await store.close()

    async with await psycopg.AsyncConnection.connect(pg_schema.url) as conn:
        cursor = await conn.execute(
            f"SELECT version FROM {pg_schema.name}.oracle_schema ORDER BY version"  # type: ignore[arg-type]
        )
        versions = [row[0] for row in await cursor.fetchall()]
    assert versions == [number for number, _, _ in migrations.MIGRATIONS]


async def test_a_database_newer_than_this_release_is_refused_naming_both_versions(
    pg_schema: PgSchema,
) -> None:
    first = pg_schema.store()
    await first.threads()
    await first.close()
    async with await psycopg.AsyncConnection.connect(pg_schema.url, autocommit=True) as conn:
        await conn.execute(
            f"INSERT INTO {pg_schema.name}.oracle_schema VALUES (99, 'from the future')"  # type: ignore[arg-type]
        )
    store = pg_schema.store()

    with pytest.raises(StoreSchemaError, match=f"version 99, newer than .*{migrations.LATEST}"):
        await store.threads()
    await store.close()


@dataclass
class Event:
    """A stand-in run event."""

    type: str
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **self.data}


async def test_a_follower_on_one_store_receives_what_another_publishes_in_order(
    pg_schema: PgSchema,
) -> None:
    here, there = pg_schema.store(), pg_schema.store()
    big = "word " * 5_000  # past the notification payload limit
    sent = [Event("text_delta", {"text": f"{i}\x00\ud83d"}) for i in range(50)]
    sent.insert(10, Event("tool_result", {"content": big}))
    try:
        await there.threads()
        async with here.events.subscribe("t\x00") as follower:
            for event in sent:
                there.events.publish("t\x00", event)
            got = [await asyncio.wait_for(follower.next(), 30) for _ in sent]
    finally:
        await here.close()
        await there.close()

    assert got == [{**e.to_json(), **({"text": clean_text(e.data["text"])} if "text" in e.data
                                       else {})} for e in sent]  # fmt: skip


async def test_a_follower_hears_nothing_of_another_schema_or_thread(
    pg_schema: PgSchema, tmp_path: Path
) -> None:
    from stores import make_schema

    other_schema = make_schema()
    other = next(other_schema)
    here, there = pg_schema.store(), other.store()
    try:
        await there.threads()
        async with here.events.subscribe("t") as follower:
            there.events.publish("t", Event("text_delta", {"text": "other schema"}))
            here.events.publish("u", Event("text_delta", {"text": "other thread"}))
            here.events.publish("t", Event("text_delta", {"text": "mine"}))
            assert await asyncio.wait_for(follower.next(), 30) == {
                "type": "text_delta",
                "text": "mine",
            }
    finally:
        await here.close()
        await there.close()
        other_schema.close()


def test_oracle_database_url_must_be_a_postgres_url() -> None:
    from oracle_core import Settings

    with pytest.raises(
        ValueError, match="ORACLE_DATABASE_URL must be a postgresql:// URL"
    ) as error:
        Settings.from_env({"ORACLE_DATABASE_URL": "mysql://root:secret@db/oracle"})

    assert "secret" not in str(error.value)  # a password is never echoed


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("ORACLE_DATABASE_POOL_SIZE", "0", "ORACLE_DATABASE_POOL_SIZE"),
        ("ORACLE_DATABASE_POOL_SIZE", "many", "ORACLE_DATABASE_POOL_SIZE"),
        ("ORACLE_LEASE_TTL", "0", "ORACLE_LEASE_TTL"),
        ("ORACLE_LEASE_TTL", "soon", "ORACLE_LEASE_TTL"),
    ],
)
def test_bad_store_settings_are_refused_naming_the_variable(
    variable: str, value: str, message: str
) -> None:
    from oracle_core import Settings

    with pytest.raises(ValueError, match=message):
        Settings.from_env({variable: value})


def test_store_settings_are_read_from_the_environment() -> None:
    from oracle_core import Settings

    settings = Settings.from_env(
        {"ORACLE_DATABASE_URL": "postgresql://u@h/d", "ORACLE_DATABASE_POOL_SIZE": "3",
         "ORACLE_LEASE_TTL": "5"}
    )  # fmt: skip

    assert (settings.database_url, settings.database_pool_size) == ("postgresql://u@h/d", 3)
    assert settings.run_limits.lease_ttl == 5.0
    assert "u@h" not in repr(settings)


async def test_leases_run_on_the_databases_clock_when_no_clock_is_given(
    pg_schema: PgSchema,
) -> None:
    from oracle_core.values.threads import RunRecord

    here, there = pg_schema.store(), pg_schema.store()
    try:
        assert await here.acquire("t", "one", ttl=3600)
        await here.append("t", base=0, run=RunRecord(id="r1", thread_id="t"), lease="one")
        assert not await there.acquire("t", "two", ttl=3600)
        assert await there.mark_interrupted() == []  # its lease is live by the database's clock
        await here.release("t", "one")

        assert await there.mark_interrupted() == ["r1"]
        assert await there.acquire("t", "two", ttl=3600)
    finally:
        await here.close()
        await there.close()


async def test_a_follower_hears_again_after_its_listening_connection_is_cut(
    pg_schema: PgSchema,
) -> None:
    here, there = pg_schema.store(), pg_schema.store()
    try:
        await there.threads()
        async with here.events.subscribe("t") as follower:
            async with await psycopg.AsyncConnection.connect(pg_schema.url, autocommit=True) as c:
                cursor = await c.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = %s",
                    (here.events.application_name,),
                )
                assert [row[0] for row in await cursor.fetchall()] == [True]
            heard = None
            for attempt in range(120):  # the listener reconnects within about a second
                there.events.publish("t", Event("text_delta", {"text": str(attempt)}))
                try:
                    heard = await asyncio.wait_for(follower.next(), 0.5)
                    break
                except TimeoutError:
                    continue
    finally:
        await here.close()
        await there.close()

    assert heard is not None and heard["type"] == "text_delta"


async def test_a_store_carries_on_when_the_server_drops_its_connections(
    pg_schema: PgSchema,
) -> None:
    store = pg_schema.store()
    try:
        await store.append("t", base=0, messages=[{"role": "user", "content": "before"}])
        async with await psycopg.AsyncConnection.connect(pg_schema.url, autocommit=True) as c:
            await c.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (store.application_name,),
            )

        await store.append("t", base=1, messages=[{"role": "user", "content": "after"}])
        state = await store.load("t")
    finally:
        await store.close()

    assert [m["content"] for m in state.messages] == ["before", "after"]
