"""The ``oracle`` command line. Each command imports what it needs when it runs, so
``oracle --help`` and ``oracle plugins`` never pay for litellm."""

from __future__ import annotations

import gc

import click

from oracle_core.cli.ask import ask_command
from oracle_core.cli.chat import chat_command
from oracle_core.cli.config import config_command
from oracle_core.cli.connections import connections_group
from oracle_core.cli.db import db_group
from oracle_core.cli.demo import demo_command
from oracle_core.cli.errors import OracleGroup
from oracle_core.cli.install import install_command, uninstall_command
from oracle_core.cli.keys import keys_group
from oracle_core.cli.logs import logs_command
from oracle_core.cli.mcp import mcp_command
from oracle_core.cli.models import models_command
from oracle_core.cli.operations import operations_group
from oracle_core.cli.plugin import plugin_group
from oracle_core.cli.plugins import plugins_command
from oracle_core.cli.prompt import prompt_command
from oracle_core.cli.search import search_command
from oracle_core.cli.serve import serve_command
from oracle_core.cli.threads import threads_group
from oracle_core.cli.usage import usage_command
from oracle_core.version import DISTRIBUTION


@click.group(cls=OracleGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name=DISTRIBUTION, prog_name="oracle")
def main() -> None:
    """oracle: an LLM agent whose capabilities come from plugins.

    `oracle "PROMPT"` asks PROMPT, as `oracle ask "PROMPT"` does (a first word that is no
    command runs ask, as llm does).
    """
    import os

    from oracle_core.telemetry.otel_setup import configure_from_env

    configure_from_env(os.environ)  # traces over OTLP when OTEL_* ask (docs/observability.md)


for command in (
    demo_command,
    plugins_command,
    search_command,
    prompt_command,
    ask_command,
    chat_command,
    models_command,
    keys_group,
    threads_group,
    logs_command,
    usage_command,
    config_command,
    serve_command,
    mcp_command,
    connections_group,
    operations_group,
    db_group,
    plugin_group,
    install_command,
    uninstall_command,
):
    main.add_command(command)


def run() -> None:
    """The ``oracle`` program: :func:`main` in a process of its own (the console script and
    ``python -m oracle_core``).

    When the command has ended, the objects still alive are frozen (:func:`gc.freeze`):
    otherwise the interpreter's last collections at exit walk every one of them (with
    thousands of plugins, about a second) only to free memory the process is handing back.
    What must happen at exit does not wait for that: the commands close their stores,
    servers and files, and ``atexit`` handlers (logging, OpenTelemetry) still run. Only
    ``__del__`` methods of objects in reference cycles are not called, which Python never
    promises at exit. Tests that call :func:`main` in their own process never freeze it.
    """
    try:
        main()
    finally:
        gc.freeze()


__all__ = ["main", "run"]
