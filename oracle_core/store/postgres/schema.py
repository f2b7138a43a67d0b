"""The Postgres store's schema: numbered migrations, applied once under an advisory lock.

``oracle_schema`` records every migration applied (its version and when). On start, a
process takes a session advisory lock for the schema (a key derived from the schema's
name, so stores in different schemas never wait for each other), applies the migrations
the database lacks, each in its own transaction, and lets go: two processes starting at
once apply each migration once, the second finding it done. A database at a version newer
than this release knows is refused, naming both versions.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from oracle_core.errors import StoreSchemaError
from oracle_core.store.postgres import credentials, notify, operations, usage

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (
        1,
        "threads, messages, loaded plugins, runs, leases and event payloads",
        """
CREATE TABLE oracle_threads (
    thread_key bytea PRIMARY KEY,
    thread_id text NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL
);
CREATE INDEX oracle_threads_recent ON oracle_threads (updated_at DESC);
CREATE TABLE oracle_messages (
    thread_key bytea NOT NULL,
    seq integer NOT NULL,
    message text NOT NULL,
    tokens integer NOT NULL,
    PRIMARY KEY (thread_key, seq)
);
CREATE TABLE oracle_loaded_plugins (
    thread_key bytea NOT NULL,
    plugin text NOT NULL,
    seq integer NOT NULL,
    PRIMARY KEY (thread_key, plugin)
);
CREATE TABLE oracle_runs (
    run_id text PRIMARY KEY,
    thread_key bytea NOT NULL,
    created_at double precision NOT NULL,
    record text NOT NULL,
    status text NOT NULL,
    ord bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX oracle_runs_by_thread ON oracle_runs (thread_key, created_at, ord);
CREATE INDEX oracle_runs_running ON oracle_runs (thread_key) WHERE status = 'running';
CREATE TABLE oracle_leases (
    thread_key bytea PRIMARY KEY,
    owner text NOT NULL,
    ttl double precision NOT NULL,
    expires_at double precision NOT NULL
);
CREATE TABLE oracle_lease_waiters (
    thread_key bytea NOT NULL,
    owner text NOT NULL,
    since double precision NOT NULL,
    seen_at double precision NOT NULL,
    PRIMARY KEY (thread_key, owner)
);
CREATE TABLE oracle_event_payloads (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at double precision NOT NULL,
    payload text NOT NULL
);

-- The time leases expire by: the caller's clock when it passes one, else the database's,
-- so processes on machines whose clocks disagree still agree on every expiry.
CREATE FUNCTION oracle_now(given double precision) RETURNS double precision
LANGUAGE sql VOLATILE AS $$
    SELECT coalesce(given, extract(epoch FROM clock_timestamp())::double precision)
$$;

-- One step, atomically: the thread's row is locked first, so steps on one thread queue.
CREATE FUNCTION oracle_append(
    p_key bytea, p_thread_id text, p_base integer, p_messages text[], p_tokens integer[],
    p_plugins text[], p_run_id text, p_run_created double precision, p_run_record text,
    p_run_status text, p_lease text, p_now double precision
) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
    now double precision := oracle_now(p_now);
    actual integer;
    p_plugin text;
BEGIN
    INSERT INTO oracle_threads VALUES (p_key, p_thread_id, now, now)
    ON CONFLICT (thread_key) DO UPDATE SET updated_at = excluded.updated_at;
    IF cardinality(p_messages) > 0 THEN
        SELECT coalesce(max(seq) + 1, 0) INTO actual FROM oracle_messages
        WHERE thread_key = p_key;
        IF actual <> p_base THEN
            RAISE EXCEPTION 'oracle thread conflict' USING ERRCODE = 'OR409', DETAIL = actual;
        END IF;
        INSERT INTO oracle_messages (thread_key, seq, message, tokens)
        SELECT p_key, p_base + (u.i - 1)::integer, u.m, u.t
        FROM unnest(p_messages, p_tokens) WITH ORDINALITY AS u(m, t, i);
    END IF;
    FOREACH p_plugin IN ARRAY p_plugins LOOP
        INSERT INTO oracle_loaded_plugins (thread_key, plugin, seq)
        SELECT p_key, p_plugin, coalesce(max(seq), -1) + 1 FROM oracle_loaded_plugins
        WHERE thread_key = p_key
        ON CONFLICT DO NOTHING;
    END LOOP;
    IF p_run_id IS NOT NULL THEN
        INSERT INTO oracle_runs (run_id, thread_key, created_at, record, status)
        VALUES (p_run_id, p_key, p_run_created, p_run_record, p_run_status)
        ON CONFLICT (run_id) DO UPDATE SET record = excluded.record, status = excluded.status;
    END IF;
    IF p_lease IS NOT NULL THEN
        UPDATE oracle_leases SET expires_at = now + ttl
        WHERE thread_key = p_key AND owner = p_lease;
    END IF;
    RETURN ARRAY(SELECT l.plugin FROM oracle_loaded_plugins AS l
                 WHERE l.thread_key = p_key ORDER BY l.seq);
END
$$;

-- Take or renew a lease (see Checkpointer.acquire): acquirers of one thread queue on a
-- transaction advisory lock, so the check and the take are one step across processes.
CREATE FUNCTION oracle_acquire(
    p_key bytea, p_owner text, p_ttl double precision, p_liveness double precision,
    p_now double precision
) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    now double precision := oracle_now(p_now);
    held_owner text;
    held_expiry double precision;
    mine double precision;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('oracle_lease'),
                                  ('x' || encode(substr(p_key, 1, 4), 'hex'))::bit(32)::integer);
    SELECT owner, expires_at INTO held_owner, held_expiry FROM oracle_leases
    WHERE thread_key = p_key;
    IF held_owner IS DISTINCT FROM p_owner THEN
        SELECT since INTO mine FROM oracle_lease_waiters
        WHERE thread_key = p_key AND owner = p_owner;
        IF (held_owner IS NOT NULL AND held_expiry > now) OR EXISTS (
            SELECT 1 FROM oracle_lease_waiters
            WHERE thread_key = p_key AND owner <> p_owner AND seen_at > now - p_liveness
              AND since < coalesce(mine, now)
        ) THEN
            INSERT INTO oracle_lease_waiters VALUES (p_key, p_owner, now, now)
            ON CONFLICT (thread_key, owner) DO UPDATE SET seen_at = excluded.seen_at;
            RETURN false;
        END IF;
    END IF;
    INSERT INTO oracle_leases (thread_key, owner, ttl, expires_at)
    VALUES (p_key, p_owner, p_ttl, now + p_ttl)
    ON CONFLICT (thread_key) DO UPDATE SET owner = excluded.owner, ttl = excluded.ttl,
        expires_at = excluded.expires_at;
    DELETE FROM oracle_lease_waiters WHERE thread_key = p_key AND owner = p_owner;
    RETURN true;
END
$$;
""",
    ),
    (2, "sealed credentials of connections", credentials.MIGRATION),
    (3, "operations: approvals, connections, background calls", operations.MIGRATION),
    (4, "followed event channels", notify.MIGRATION),
    (5, "the usage ledger: model calls and tool calls", usage.MIGRATION),
)
"""Every migration: ``(version, what it adds, SQL)``, in order. Append; never edit one."""

LATEST = MIGRATIONS[-1][0]
"""The schema version this release writes."""

_TABLE = """
CREATE TABLE IF NOT EXISTS oracle_schema (
    version integer PRIMARY KEY,
    description text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


@dataclass(frozen=True)
class SchemaStatus:
    """Where a database's schema stands.

    Attributes:
        schema: the Postgres schema the store's tables live in.
        version: the newest migration applied (0: none).
        latest: the newest migration this release knows.
        pending: the versions still to apply, in order.
    """

    schema: str
    version: int
    latest: int
    pending: tuple[int, ...]

    @property
    def current(self) -> bool:
        """Whether the database is exactly at this release's version."""
        return self.version == self.latest


async def _lock(conn: psycopg.AsyncConnection[Any]) -> str:
    """Take the schema's session advisory lock; return the schema's name."""
    row = await (await conn.execute("SELECT current_schema()")).fetchone()
    if row is None or row[0] is None:
        raise StoreSchemaError(
            "the Postgres search_path names no existing schema for oracle's tables: create "
            "one, or give PostgresCheckpointer(schema=...) to have it created"
        )
    schema = str(row[0])
    await conn.execute(
        "SELECT pg_advisory_lock(hashtext('oracle_schema'), hashtext(%s))", (schema,)
    )
    return schema


async def _unlock(conn: psycopg.AsyncConnection[Any], schema: str) -> None:
    await conn.execute(
        "SELECT pg_advisory_unlock(hashtext('oracle_schema'), hashtext(%s))", (schema,)
    )


async def _version(conn: psycopg.AsyncConnection[Any]) -> int:
    row = await (
        await conn.execute("SELECT coalesce(max(version), 0) FROM oracle_schema")
    ).fetchone()
    return int(row[0]) if row else 0


async def create_schema(conn: psycopg.AsyncConnection[Any], schema: str) -> None:
    """Create the Postgres schema ``schema`` if it does not exist (safe across processes)."""
    with contextlib.suppress(psycopg.errors.UniqueViolation):  # another process was first
        await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))


async def status(conn: psycopg.AsyncConnection[Any]) -> SchemaStatus:
    """Read the schema's version without changing anything (``oracle db status``)."""
    row = await (
        await conn.execute("SELECT current_schema(), to_regclass('oracle_schema') IS NOT NULL")
    ).fetchone()
    assert row is not None
    version = await _version(conn) if row[1] else 0
    pending = tuple(v for v, _, _ in MIGRATIONS if v > version)
    return SchemaStatus(str(row[0]), version, LATEST, pending)


async def upgrade(conn: psycopg.AsyncConnection[Any]) -> list[int]:
    """Apply every migration the database lacks, under the schema's advisory lock.

    ``conn`` must be in autocommit mode. Returns the versions applied (empty when the
    database was current).

    Raises:
        StoreSchemaError: when the database is at a newer version than this release knows.
    """
    schema = await _lock(conn)
    try:
        await conn.execute(_TABLE)
        version = await _version(conn)
        if version > LATEST:
            raise StoreSchemaError(
                f"the oracle tables in Postgres schema {schema!r} are at version {version}, "
                f"newer than this release of oracle-core knows ({LATEST}): upgrade oracle-core-runtime "
                "on this machine (every process sharing the database must run the same release)"
            )
        applied = []
        for number, description, text in MIGRATIONS:
            if number <= version:
                continue
            async with conn.transaction():
                await conn.execute(text)
                await conn.execute(
                    "INSERT INTO oracle_schema (version, description) VALUES (%s, %s)",
                    (number, description),
                )
            applied.append(number)
        return applied
    finally:
        await _unlock(conn, schema)
