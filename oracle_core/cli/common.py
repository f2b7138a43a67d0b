"""Helpers shared by the CLI commands."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle

model_option = click.option(
    "--model",
    envvar="ORACLE_MODEL",
    help="A litellm model string [env: ORACLE_MODEL]; unset: the offline demo model.",
)
api_base_option = click.option(
    "--api-base",
    envvar="ORACLE_API_BASE",
    help="The model server's base URL [env: ORACLE_API_BASE].",
)
thread_option = click.option(
    "--thread", default="default", show_default=True, help="The conversation thread."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")


def build_oracle(**settings: Any) -> Oracle:
    """Build the oracle from the environment (``settings`` override it).

    A strict-mode plugin failure becomes exit code 1 with the plugins named on stderr.
    """
    from oracle_core.errors import StrictPluginError
    from oracle_core.oracle import Oracle
    from oracle_core.settings import Settings

    try:
        return Oracle(settings=Settings.from_env(**settings))
    except StrictPluginError as error:
        click.echo(f"oracle: {error}", err=True)
        sys.exit(1)


def table(rows: list[list[str]], headers: list[str]) -> str:
    """Format ``rows`` as a left-aligned text table under ``headers``."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return "\n".join(lines)
