"""What reaches the operator's terminal is the oracle's own output: a stdio MCP server's
standard error (its start-up banner) goes to a DEBUG log record, not the terminal, and a
library that turns its own logger to DEBUG (bm25s) is quiet unless debug logs are asked for."""

from __future__ import annotations

import asyncio
import io
import logging
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from oracle_core import MCPServer
from oracle_core.environment import quiet_chatty_loggers
from oracle_core.plugins.mcp.connection import fetch_listing

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")

BANNER = (
    "import runpy, sys; sys.stderr.write('Secure MCP server running on stdio\\n'); "
    "sys.stderr.flush(); sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def stderr_pumps() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.endswith("-stderr")]


@pytest.mark.slow
def test_a_servers_stderr_banner_is_a_debug_record_not_terminal_output(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "oracle_core.plugins.mcp.stderr")
    server = MCPServer("chatty", command=sys.executable, args=("-c", BANNER, SERVER))

    listing = asyncio.run(fetch_listing(server))

    assert listing.tools
    for pump in stderr_pumps():
        pump.join(timeout=10)  # the pipe closed with the server: the pump ends
    assert "Secure MCP server" not in capfd.readouterr().err
    assert "MCP server chatty: Secure MCP server running on stdio" in caplog.messages


@pytest.fixture
def terminal() -> Iterator[io.StringIO]:
    """A handler on the root logger at no level, as ``logging.basicConfig`` installs."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    chatty = logging.getLogger("bm25s")
    level, oracle_level = chatty.level, logging.getLogger("oracle_core").level
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        chatty.setLevel(level)
        logging.getLogger("oracle_core").setLevel(oracle_level)


def test_a_library_that_turns_itself_to_debug_is_quiet(terminal: io.StringIO) -> None:
    quiet_chatty_loggers()
    # The operator asked for no debug logs (whatever an earlier test left on the root).
    logging.getLogger("oracle_core").setLevel(logging.INFO)
    chatty = logging.getLogger("bm25s")
    chatty.setLevel(logging.DEBUG)  # what bm25s does when it is imported

    chatty.debug("Building index from IDs objects")
    chatty.warning("the index is empty")

    assert "Building index" not in terminal.getvalue()
    assert "the index is empty" in terminal.getvalue()


def test_its_debug_lines_show_when_the_operator_asks_for_debug_logs(
    terminal: io.StringIO,
) -> None:
    quiet_chatty_loggers()
    logging.getLogger("oracle_core").setLevel(logging.DEBUG)
    chatty = logging.getLogger("bm25s")
    chatty.setLevel(logging.DEBUG)

    chatty.debug("Building index from IDs objects")

    assert "Building index" in terminal.getvalue()
