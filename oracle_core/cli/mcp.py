"""``oracle mcp``: serve the oracle over MCP on standard input and output."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import sys
import uuid

import click

from oracle_core.cli.common import build_oracle
from oracle_core.errors import InvalidThreadIdError
from oracle_core.values.ids import check_thread_id
from oracle_core.version import DISTRIBUTION


def _thread(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    if value is None:
        return f"mcp-{uuid.uuid4().hex[:16]}"
    try:
        return check_thread_id(value)
    except InvalidThreadIdError as error:
        raise click.BadParameter(str(error)) from None


@click.command("mcp")
@click.option(
    "--thread",
    callback=_thread,
    help="The thread the session works on: a later session on the same thread finds its loads "
    "[default: a new thread, mcp-<random>].",
)
@click.option("--user", default="default", show_default=True, help="Who the calls act for.")
def mcp_command(thread: str, user: str) -> None:
    """Serve the oracle over MCP (stdio): the meta-tools and what the gate shows.

    An MCP client (an IDE, an agent, the MCP inspector) starts this command and talks
    JSON-RPC on its stdin and stdout. The session is one thread: it sees the meta-tools and
    the tools, prompts and resources its loaded capabilities show; a load announces them
    with notifications/tools/list_changed. A call that needs a person's approval asks
    through the client when it can (elicitation), else names the operation to decide.
    Needs oracle-core-runtime[mcp].
    """
    if importlib.util.find_spec("mcp") is None:
        raise click.ClickException(
            f"oracle mcp needs the MCP SDK: pip install '{DISTRIBUTION}[mcp]'"
        )
    from oracle_core.server.mcp.export import serve_stdio

    # Standard output carries the protocol: log lines go to stderr only.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    asyncio.run(serve_stdio(build_oracle(), thread, user))
