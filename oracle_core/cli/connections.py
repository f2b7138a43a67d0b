"""``oracle connections``: set, list, delete and rotate the credentials plugins need.

A value is read from a hidden prompt (a terminal) or from standard input (a pipe), never
from the command line, where it would land in the shell history and the process list.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

import click

from oracle_core.cli.common import (
    api_base_option,
    build_oracle,
    echo_json,
    json_option,
    model_option,
    table,
)
from oracle_core.cli.errors import fail

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle
    from oracle_core.values.result import RunResult

user_option = click.option(
    "--user",
    default="default",
    show_default=True,
    help="Whose credential (ignored for a shared connection).",
)


T = TypeVar("T")


def _closing(oracle: Oracle, work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work``, then close the oracle's store; an error of ``oracle`` exits 1."""
    from oracle_core.errors import OracleError

    async def go() -> T:
        try:
            return await work()
        finally:
            await oracle.checkpointer.close()

    try:
        return asyncio.run(go())
    except OracleError as error:
        fail(str(error))


def _read_value(plugin: str, name: str) -> str:
    """The credential from a hidden prompt, or the first line of a piped standard input."""
    if sys.stdin.isatty():
        value: str = click.prompt(
            f"Value for connection {name!r} of plugin {plugin!r} (hidden)",
            hide_input=True,
            err=True,
        )
    else:
        value = sys.stdin.readline()
    return value.strip()


def _run_line(result: RunResult) -> str:
    line = f"resumed run {result.run_id} on thread {result.thread_id!r}: {result.status}"
    if result.status == "completed":
        return f"{line}\n{result.answer}"
    if result.error:
        return f"{line}: {result.error}"
    if result.status.startswith("waiting_for_"):
        from oracle_core.cli.operations import waiting_text

        return f"{line}\n{waiting_text(result)}"
    return line


@click.group("connections")
def connections_group() -> None:
    """Credentials plugins need (API keys, OAuth tokens), stored encrypted."""


@connections_group.command("list")
@click.option("--user", default=None, help="Only this user's (and shared) connections.")
@json_option
def list_command(user: str | None, as_json: bool) -> None:
    """Show every connection plugins declare and whether it is set, per user (never values)."""
    oracle = build_oracle()
    try:
        lines = _closing(oracle, lambda: oracle.connection_statuses(user_id=user))
    except Exception as error:  # the store cannot be read
        fail(str(error))
    if as_json:
        echo_json([line.to_json() for line in lines])
        return
    if not lines:
        click.echo("No plugin declares a connection.")
        return
    rows = [
        [
            f"{line.plugin}/{line.name}",
            line.kind or "(not declared)",
            (line.user_id or "-") if line.per_user else "shared",
            "set" if line.set else "not set",
            _when(line.updated_at),
        ]
        for line in lines
    ]
    click.echo(table(rows, ["CONNECTION", "KIND", "USER", "STATUS", "UPDATED"]))


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


@connections_group.command("set")
@click.argument("plugin")
@click.argument("name")
@user_option
@model_option
@api_base_option
@json_option
def set_command(
    plugin: str, name: str, user: str, model: str | None, api_base: str | None, as_json: bool
) -> None:
    """Store the credential NAME of PLUGIN and resume the runs waiting for it.

    The value is read from a hidden prompt, or from standard input when it is piped
    (`printf %s "$KEY" | oracle connections set PLUGIN NAME`); never from the arguments.
    """
    from oracle_core.credentials.sealed import find_connection
    from oracle_core.errors import OracleError

    oracle = build_oracle(model=model, api_base=api_base)  # the model resumed runs talk to
    try:
        connection = find_connection(oracle.registry, plugin, name)
    except OracleError as error:
        fail(str(error))
    value = _read_value(plugin, name)
    try:
        resumed = oracle.supply_credential_sync(plugin, name, value, user_id=user)
    except OracleError as error:
        fail(str(error))
    finally:
        oracle.close_sync()
    who = user if connection.per_user else None
    if as_json:
        body = {
            "plugin": plugin,
            "connection": name,
            "user_id": who,
            "set": True,
            "resumed": [r.to_json() for r in resumed],
        }
        echo_json(body)
        return
    whose = f"for user {user!r}" if who else "(shared by every user)"
    click.echo(f"Set connection {name!r} of plugin {plugin!r} {whose}.")
    for result in resumed:
        click.echo(_run_line(result))


@connections_group.command("delete")
@click.argument("plugin")
@click.argument("name")
@user_option
def delete_command(plugin: str, name: str, user: str) -> None:
    """Remove the stored credential NAME of PLUGIN (a later call that needs it waits again)."""
    oracle = build_oracle()
    gone = _closing(oracle, lambda: oracle.delete_credential(plugin, name, user_id=user))
    click.echo(
        f"Deleted connection {name!r} of plugin {plugin!r}."
        if gone
        else f"Connection {name!r} of plugin {plugin!r} was not set."
    )


@connections_group.command("keygen")
def keygen_command() -> None:
    """Print a new random key for ORACLE_SECRET_KEY."""
    from oracle_core.credentials.vault import generate_key

    click.echo(generate_key())


@connections_group.command("rotate")
def rotate_command() -> None:
    """Seal every stored credential again with the first key of ORACLE_SECRET_KEY.

    Rotate a key by setting ORACLE_SECRET_KEY=NEW,OLD, running this, then dropping OLD.
    """
    oracle = build_oracle()
    count = _closing(oracle, oracle.credentials.rotate)
    click.echo(f"Re-sealed {count} credential(s) with the first key of ORACLE_SECRET_KEY.")
