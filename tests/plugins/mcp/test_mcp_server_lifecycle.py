"""An imported MCP server's life against a real stdio server (tests/mcp_server.py): closing
the oracle while the server starts leaves nothing behind, and a server that died while idle
is restarted by the call that finds it dead."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oracle_core import MCPServer, Oracle, Settings
from oracle_core.plugins.mcp.adapter import MCPPlugin
from oracle_core.store import MemoryCheckpointer
from oracle_core.testing import ScriptedModel
from oracle_core.testing.drive import call_tool

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).resolve().parents[2] / "mcp_server.py")


def arith(starts: Path, hold: Path | None = None) -> MCPServer:
    env = {"MCP_TEST_STARTS": str(starts)}
    if hold is not None:
        env["MCP_TEST_HOLD"] = str(hold)
    return MCPServer("arith", command=sys.executable, args=(SERVER,), env=env, backoff=0.01)


def held(home: Path, starts: Path) -> Oracle:
    """An oracle whose server, once started, stays starting (its listing cached before)."""
    go, hold = home / "go", home / "hold"
    go.touch()  # a plain file: the server reads it at once and serves
    assert "arith" in build(home, arith(starts, go)).registry  # listed once, then cached
    os.mkfifo(hold)
    return build(home, arith(starts, hold))


def build(home: Path, server: MCPServer) -> Oracle:
    return Oracle(
        [server],
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(home)}),
        checkpointer=MemoryCheckpointer(),
        model=ScriptedModel(),
    )


def adapter(oracle: Oracle) -> MCPPlugin:
    plugin = oracle.registry.get("arith")
    assert plugin is not None, oracle.registry.failures
    assert isinstance(plugin.obj, MCPPlugin)
    return plugin.obj


def pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().splitlines()] if path.exists() else []


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in status.lower()


async def until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` (another process's state: no event to wait on); fail after 20 s."""
    deadline = time.monotonic() + 20
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after 20 s waiting until {what}")
        await asyncio.sleep(0.01)


def test_closing_the_oracle_while_its_server_starts_prints_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = tmp_path / "starts"
    oracle = held(tmp_path, log)
    connection = adapter(oracle).connection
    unhandled: list[dict[str, Any]] = []

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, c: unhandled.append(c))
        await call_tool(oracle, "load_capability", {"names": ["arith"]})  # starts it
        await until(lambda: len(pids(log)) == 2, "the server process started")
        assert connection.state == "starting"
        await oracle.close()
        gc.collect()  # a task whose error nobody took reports it when it is collected
        await asyncio.sleep(0)

    with caplog.at_level(logging.DEBUG):
        asyncio.run(scenario())
    gc.collect()

    assert unhandled == []
    assert "never retrieved" not in caplog.text
    assert connection.state == "stopped"
    assert not alive(pids(log)[-1])


def test_a_server_that_is_never_ready_is_stopped_when_the_loop_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = tmp_path / "starts"
    oracle = held(tmp_path, log)
    unhandled: list[dict[str, Any]] = []

    async def scenario() -> None:  # returns with the start still under way, never closing
        asyncio.get_running_loop().set_exception_handler(lambda _, c: unhandled.append(c))
        await call_tool(oracle, "load_capability", {"names": ["arith"]})
        await until(lambda: len(pids(log)) == 2, "the server process started")

    with caplog.at_level(logging.DEBUG):
        asyncio.run(scenario())
    gc.collect()

    assert unhandled == []
    assert "never retrieved" not in caplog.text
    assert not alive(pids(log)[-1])


def test_a_server_that_died_while_idle_is_restarted_by_the_next_call(tmp_path: Path) -> None:
    log = tmp_path / "starts"
    oracle = build(tmp_path, arith(log))
    connection = adapter(oracle).connection

    async def scenario() -> Any:
        assert await call_tool(oracle, "arith_add", {"a": 1, "b": 1}) == {"result": 2}
        first = pids(log)[-1]
        os.kill(first, signal.SIGKILL)
        await until(lambda: not alive(first), "the server process died")
        await until(lambda: connection.status()["state"] == "crashed", "the exit was seen")
        again = await call_tool(oracle, "arith_add", {"a": 2, "b": 2})
        await oracle.close()
        return again

    assert asyncio.run(scenario()) == {"result": 4}
    assert connection.restarts == 1
    assert len(pids(log)) == 3  # the listing at assembly, the first start, the restart
