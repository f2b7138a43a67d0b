"""``oracle keys``: API keys stored by name in ``$ORACLE_HOME/keys.json`` (mode 0600).

A model call uses the key named like its provider (``openai``, ``anthropic``, ...; the part
of the model string before ``/``), else the one named ``ORACLE_API_KEY``, when neither
``--api-key``/``ORACLE_API_KEY`` nor the provider's own variable is set
(:mod:`oracle_core.settings.keys`). Values are printed only by ``oracle keys get``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from oracle_core.cli.common import echo_json, json_option


def _store() -> Path:
    from oracle_core.settings import Settings
    from oracle_core.settings.keys import keys_path

    return keys_path(Settings.from_env().home)


def _read_value(value: str | None) -> str:
    if value is None:
        if sys.stdin.isatty():
            value = click.prompt("Enter key", hide_input=True, prompt_suffix=": ")
        else:
            value = sys.stdin.read().rstrip("\r\n")
    if not value.strip():
        raise click.UsageError("the key is empty: type it at the prompt, pipe it, or pass --value")
    return value


@click.group("keys")
def keys_group() -> None:
    """Store API keys by name, used when no key is set in the environment.

    A model call uses the stored key named like its provider (`openai`, `anthropic`,
    ...), else the one named ORACLE_API_KEY, when neither --api-key, ORACLE_API_KEY
    nor the provider's own variable (e.g. OPENAI_API_KEY) is set.
    """


@keys_group.command("set")
@click.argument("name")
@click.option(
    "--value", help="The key itself, for scripts (it stays in your shell history; prefer a pipe)."
)
def set_command(name: str, value: str | None) -> None:
    """Store a key as NAME: typed at a hidden prompt, piped on stdin, or --value."""
    from oracle_core.settings.keys import set_key

    set_key(_store(), name, _read_value(value))
    click.echo(f"Stored key {name!r}.", err=True)


@keys_group.command("list")
@json_option
def list_command(as_json: bool) -> None:
    """List the names of the stored keys (never their values)."""
    from oracle_core.settings.keys import read_keys

    names = sorted(read_keys(_store()))
    if as_json:
        echo_json(names)
    elif names:
        click.echo("\n".join(names))
    else:
        click.echo("No keys stored. Add one with: oracle keys set NAME", err=True)


@keys_group.command("get")
@click.argument("name")
def get_command(name: str) -> None:
    """Print the value of the key NAME (for scripts: `$(oracle keys get openai)`)."""
    from oracle_core.settings.keys import read_keys

    keys = read_keys(_store())
    if name not in keys:
        click.echo(f"oracle: no key named {name!r}; `oracle keys list` shows the names", err=True)
        sys.exit(1)
    click.echo(keys[name])


@keys_group.command("path")
def path_command() -> None:
    """Print the path of the key store file."""
    click.echo(str(_store()))


@keys_group.command("remove")
@click.argument("name")
def remove_command(name: str) -> None:
    """Remove the key NAME."""
    from oracle_core.settings.keys import remove_key

    if not remove_key(_store(), name):
        click.echo(f"oracle: no key named {name!r}; `oracle keys list` shows the names", err=True)
        sys.exit(1)
    click.echo(f"Removed key {name!r}.", err=True)
