"""``oracle db status`` / ``oracle db upgrade`` against the real Postgres and a SQLite home."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[postgres]'")

import json
from pathlib import Path

import psycopg
from click.testing import CliRunner, Result
from stores import PgSchema

from oracle_core.cli import main
from oracle_core.store.postgres import schema as migrations

ALL = ", ".join(str(number) for number, _, _ in migrations.MIGRATIONS)


def db(*args: str, url: str | None = None, home: Path | None = None) -> Result:
    env = {"ORACLE_DATABASE_URL": url or "", "ORACLE_HOME": str(home or "/nonexistent")}
    return CliRunner().invoke(main, ["db", *args], env=env)


def test_status_names_the_pending_migrations_and_exits_1(pg_schema: PgSchema) -> None:
    result = db("status", url=pg_schema.env_url)

    assert result.exit_code == 1
    assert f"schema {pg_schema.name}" in result.output
    assert f"pending: {ALL}: run `oracle db upgrade`" in result.output


def test_upgrade_applies_every_migration_once_then_status_is_current(pg_schema: PgSchema) -> None:
    first = db("upgrade", "--json", url=pg_schema.env_url)
    again = db("upgrade", "--json", url=pg_schema.env_url)
    status = db("status", url=pg_schema.env_url)

    assert json.loads(first.output)["applied"] == [n for n, _, _ in migrations.MIGRATIONS]
    assert json.loads(again.output)["applied"] == []
    assert status.exit_code == 0 and "up to date" in status.output


def test_upgrade_refuses_a_database_newer_than_this_release(pg_schema: PgSchema) -> None:
    db("upgrade", url=pg_schema.env_url)
    with psycopg.connect(pg_schema.url, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {pg_schema.name}.oracle_schema VALUES (999, 'future')")  # type: ignore[arg-type]

    result = db("upgrade", url=pg_schema.env_url)

    assert result.exit_code == 1
    assert "version 999, newer than this release" in result.output


def test_an_unreachable_database_is_reported_naming_the_variable() -> None:
    result = db("status", url="postgresql://nobody@127.0.0.1:1/none")

    assert result.exit_code == 1
    assert "cannot connect to the Postgres of ORACLE_DATABASE_URL" in result.output


def test_the_sqlite_store_reports_its_version_too(tmp_path: Path) -> None:
    before = db("status", "--json", home=tmp_path)
    db("upgrade", home=tmp_path)
    after = db("status", "--json", home=tmp_path)

    assert (before.exit_code, json.loads(before.output)["version"]) == (1, 0)
    assert (after.exit_code, json.loads(after.output)["version"]) == (0, 1)
    assert json.loads(after.output)["path"] == str(tmp_path / "oracle.db")
