"""``oracle db status`` / ``oracle db upgrade``: where the store's schema stands, and bring it up.

With ``ORACLE_DATABASE_URL`` set they look at Postgres (the schema's version in
``oracle_schema``, migrations pending); otherwise at the SQLite file under ``ORACLE_HOME``,
whose tables are created and migrated whenever a process opens it. Neither command builds
an oracle or loads a plugin.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from oracle_core.settings import Settings


async def _postgres(url: str, upgrade: bool) -> dict[str, Any]:
    import psycopg

    from oracle_core.store.postgres import schema

    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            applied = await schema.upgrade(conn) if upgrade else []
            found = await schema.status(conn)
    except psycopg.OperationalError as error:
        raise click.ClickException(
            f"cannot connect to the Postgres of ORACLE_DATABASE_URL: {error}".strip()
        ) from None
    return {
        "store": "postgres",
        "schema": found.schema,
        "version": found.version,
        "latest": found.latest,
        "pending": list(found.pending),
        "applied": applied,
        "current": found.current,
    }


async def _sqlite(settings: Settings, upgrade: bool) -> dict[str, Any]:
    import sqlite3

    from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer

    path = settings.database_path
    if upgrade:
        store = SQLiteCheckpointer(path)
        try:
            await store.threads()  # opening creates or migrates the tables
        finally:
            await store.close()
    exists = path.exists()
    tables = False
    if exists:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            tables = bool(
                db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'oracle_threads'"
                ).fetchone()
            )
    return {
        "store": "sqlite",
        "path": str(path),
        "version": 1 if tables else 0,
        "latest": 1,
        "pending": [] if tables else [1],
        "applied": [],
        "current": tables,
    }


def _report(settings: Settings, upgrade: bool) -> dict[str, Any]:
    if settings.database_url:
        return asyncio.run(_postgres(settings.database_url, upgrade))
    return asyncio.run(_sqlite(settings, upgrade))


def _echo(found: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(found))
        return
    where = f"schema {found['schema']}" if found["store"] == "postgres" else found["path"]
    click.echo(f"store: {found['store']} ({where})")
    click.echo(f"version: {found['version']} (this release writes {found['latest']})")
    if found["applied"]:
        click.echo(f"applied now: {', '.join(map(str, found['applied']))}")
    if found["pending"]:
        click.echo(f"pending: {', '.join(map(str, found['pending']))}: run `oracle db upgrade`")
    else:
        click.echo("up to date")


@click.group("db")
def db_group() -> None:
    """The thread store's schema: Postgres with ORACLE_DATABASE_URL, else SQLite."""


@db_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def status_command(as_json: bool) -> None:
    """Show the schema version and what migrations are pending (exit 1 when any are)."""
    from oracle_core.settings import Settings

    found = _report(Settings.from_env(), upgrade=False)
    _echo(found, as_json)
    if found["pending"]:
        raise SystemExit(1)


@db_group.command("upgrade")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def upgrade_command(as_json: bool) -> None:
    """Apply the pending migrations (safe while servers run, and from several machines at once).

    Processes apply them on start too; run this to migrate before rolling out a release.
    """
    try:
        from oracle_core.settings import Settings

        found = _report(Settings.from_env(), upgrade=True)
    except Exception as error:
        from oracle_core.errors import StoreSchemaError

        if isinstance(error, StoreSchemaError):
            raise click.ClickException(str(error)) from None
        raise
    _echo(found, as_json)
