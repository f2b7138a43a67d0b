"""Helpers shared by the CLI commands."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle


def build_oracle() -> Oracle:
    """Build the oracle from the environment, turning a strict-mode failure into exit code 1."""
    from oracle_core.errors import StrictPluginError
    from oracle_core.oracle import Oracle

    try:
        return Oracle()
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
