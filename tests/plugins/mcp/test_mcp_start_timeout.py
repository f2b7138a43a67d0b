"""An MCP server slower to start than its ``start_timeout`` (a cold ``npx`` downloading its
package) is reported as a timeout: how long was waited and to raise ``start_timeout``, not
"check its command", which stays for a command that is not found or exits."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from oracle_core import MCPServer, Oracle, Settings
from oracle_core.errors import ToolError
from oracle_core.plugins.mcp.connection import ServerConnection, fetch_listing

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).resolve().parents[2] / "mcp_server.py")


def held_forever(home: Path) -> Path:
    """A FIFO nobody writes: the test server that opens it stays starting."""
    hold = home / "hold"
    os.mkfifo(hold)
    return hold


def failures(home: Path, toml: str) -> list[str]:
    (home / "oracle.toml").write_text(toml)
    env = {"ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": "slow"}
    oracle = Oracle(settings=Settings.from_env(env), model="demo")
    return [str(f) for f in oracle.registry.failures]


def test_a_server_slower_than_start_timeout_is_told_to_raise_it(tmp_path: Path) -> None:
    hold = held_forever(tmp_path)
    said = failures(
        tmp_path,
        f"[mcp.slow]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
        f"start_timeout = 0.5\nenv = {{ MCP_TEST_HOLD = {json.dumps(str(hold))} }}\n",
    )
    assert len(said) == 1, said
    assert "did not start within 0.5 s" in said[0]
    assert "raise start_timeout in [mcp.slow]" in said[0]
    assert "npx" in said[0]
    assert "check its command" not in said[0]


def test_a_command_that_is_not_found_is_told_to_check_its_command(tmp_path: Path) -> None:
    said = failures(tmp_path, '[mcp.slow]\ncommand = "/nonexistent/mcp-server"\n')
    assert len(said) == 1, said
    assert "check its command" in said[0]
    assert "start_timeout" not in said[0]


def test_a_restart_slower_than_start_timeout_names_it_on_the_call(tmp_path: Path) -> None:
    go = tmp_path / "go"
    go.touch()  # a plain file: read at once, the server serves
    quick = MCPServer("arith", command=sys.executable, args=(SERVER,),
                      env={"MCP_TEST_HOLD": str(go)})  # fmt: skip
    slow = MCPServer("arith", command=sys.executable, args=(SERVER,), start_timeout=0.5,
                     env={"MCP_TEST_HOLD": str(held_forever(tmp_path))})  # fmt: skip

    async def scenario() -> str:
        listing = await fetch_listing(quick)
        connection = ServerConnection(slow, listing)
        try:
            with pytest.raises(ToolError) as caught:
                await connection.call("add", {"a": 1, "b": 2})
        finally:
            await connection.close()
        return str(caught.value)

    said = asyncio.run(scenario())
    assert "did not start within 0.5 s" in said
    assert "MCPServer(start_timeout=...)" in said
