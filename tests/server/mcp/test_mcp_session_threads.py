"""An MCP session (``oracle mcp``) makes its ``mcp-<id>`` thread only when it saves
something: a session that lists, browses, searches and is refused leaves no empty thread
behind; a load is saved, so its thread stays."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install -e '.[mcp]'")

import json
import os
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from support import serve_app

from oracle_core import Settings
from oracle_core.oracle import Oracle

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).resolve().parents[2] / "mcp_server.py")


def with_arith(home: Path) -> dict[str, str]:
    (home / "oracle.toml").write_text(
        f"[mcp.arith]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
    )
    env = {**os.environ, "ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": "arith"}
    env.pop("ORACLE_DATABASE_URL", None)
    return env


def session_threads(env: dict[str, str]) -> list[str]:
    settings = Settings.from_env(env)

    async def ids() -> list[str]:
        oracle = Oracle(entry_points=False, settings=settings, model="demo")
        try:
            return [t for t in await oracle.checkpointer.threads() if t.startswith("mcp-")]
        finally:
            await oracle.close()

    return anyio.run(ids)


def serve(env: dict[str, str], *calls: tuple[str, dict[str, object]]) -> None:
    oracle = str(Path(sys.executable).with_name("oracle"))
    params = StdioServerParameters(command=oracle, args=["mcp"], env=env)

    async def scenario() -> None:
        async with Client(params, mode="legacy") as client:
            await client.list_tools()
            for name, arguments in calls:
                await client.call_tool(name, arguments)

    anyio.run(scenario)


def test_a_session_that_only_looks_leaves_no_thread(tmp_path: Path) -> None:
    env = with_arith(tmp_path)
    serve(
        env,
        ("list_capabilities", {}),
        ("search_capabilities", {"query": "add two numbers"}),
        ("arith_add", {"a": 1, "b": 2}),  # not loaded: refused, nothing saved
    )
    assert session_threads(env) == []


def test_a_session_that_loads_a_capability_keeps_its_thread(tmp_path: Path) -> None:
    env = with_arith(tmp_path)
    serve(env, ("load_capability", {"names": ["arith"]}))
    assert len(session_threads(env)) == 1


def test_an_http_session_that_only_looks_leaves_no_thread(tmp_path: Path) -> None:

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from oracle_core.server import create_app
    from oracle_core.store import MemoryCheckpointer

    store = MemoryCheckpointer()
    oracle = Oracle(entry_points=False, settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}),
                    checkpointer=store, model="demo")  # fmt: skip

    async def scenario(url: str) -> list[str]:
        http = httpx2.AsyncClient(headers={"Authorization": "Bearer tok"}, timeout=30.0)
        transport = streamable_http_client(url, http_client=http)
        async with http, Client(transport, mode="legacy", cache=None) as client:
            await client.list_tools()
            await client.call_tool("list_capabilities", {})
            await client.call_tool("search_capabilities", {"query": "anything"})
        return await store.threads()

    with serve_app(create_app(oracle, tokens="tok")) as base:
        assert anyio.run(scenario, f"{base}/mcp") == []
