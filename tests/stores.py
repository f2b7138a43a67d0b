"""The stores every conformance test runs on, and a private Postgres schema per test.

Postgres is the server at ``ORACLE_TEST_DATABASE_URL`` (default the machine's own,
``postgresql://postgres@127.0.0.1:5432/test``); ``.ci/run`` makes sure it is up. When it
cannot be reached the Postgres tests are skipped, saying why.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from oracle_core.store import Checkpointer, MemoryCheckpointer, SQLiteCheckpointer

if TYPE_CHECKING:
    from oracle_core.store.postgres import PostgresCheckpointer

KINDS = ["memory", "sqlite", "postgres"]
"""Every store kind, as the ``connect`` fixtures' parameters."""

POSTGRES_URL = os.environ.get(
    "ORACLE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def postgres_unreachable(url: str = POSTGRES_URL) -> str | None:
    """Why the test server cannot be used, or ``None`` when it can."""
    try:
        import psycopg
    except ImportError as error:  # imported only here: without it, the other kinds still run
        return f"psycopg is not installed ({error}): pip install -e '.[postgres]'"
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as error:
        return f"Postgres at {url} is unreachable ({error}); start it (.ci/run does)"
    return None


@dataclass(frozen=True)
class PgSchema:
    """A Postgres schema of one test's own: its name and a URL whose tables live there."""

    name: str
    url: str

    def store(self, **options: object) -> PostgresCheckpointer:
        """A new store (its own pool, as another process would have) on this schema."""
        from oracle_core.store.postgres import PostgresCheckpointer

        return PostgresCheckpointer(self.url, schema=self.name, **options)  # type: ignore[arg-type]

    @property
    def env_url(self) -> str:
        """``ORACLE_DATABASE_URL`` for a child process, its search_path set to this schema."""
        return f"{self.url}?options=-csearch_path%3D{self.name}"


def drop_schema(name: str, url: str = POSTGRES_URL) -> None:
    """Drop a test's schema and everything in it."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')  # type: ignore[arg-type]


def make_schema() -> Iterator[PgSchema]:
    """A fresh schema (created), dropped after; skips the test if Postgres is unreachable."""
    reason = postgres_unreachable()
    if reason:
        pytest.skip(reason)
    import psycopg

    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')  # type: ignore[arg-type]
    try:
        yield PgSchema(name, POSTGRES_URL)
    finally:
        drop_schema(name)


def opener(
    kind: str, tmp_path: Path, clock: Callable[[], float], schema: PgSchema | None
) -> Callable[[], Checkpointer]:
    """Opens the store of ``kind`` again each call, as another process would (memory: one)."""
    memory = MemoryCheckpointer(clock=clock)

    def connect() -> Checkpointer:
        if kind == "memory":
            return memory
        if kind == "sqlite":
            return SQLiteCheckpointer(tmp_path / "oracle.db", clock=clock)
        assert schema is not None
        return schema.store(clock=clock)

    return connect


class Clock:
    """A wall clock the test moves by hand, so lease expiry and deadlines need no sleeping."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now
