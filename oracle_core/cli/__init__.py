"""The ``oracle`` command line. Each command imports what it needs when it runs, so
``oracle --help`` and ``oracle plugins`` never pay for litellm."""

from __future__ import annotations

import click

from oracle_core.cli.plugins_command import plugins_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="oracle-core", prog_name="oracle")
def main() -> None:
    """oracle: an LLM agent whose capabilities come from plugins."""


main.add_command(plugins_command)

__all__ = ["main"]
