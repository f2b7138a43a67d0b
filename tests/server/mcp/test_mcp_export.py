"""The oracle served over MCP, tested with the SDK's own client: ``oracle mcp`` over stdio (a
real subprocess) and ``/mcp`` on ``oracle serve`` over streamable HTTP (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install -e '.[mcp]'")

import json
import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client, StdioServerParameters
from support import serve_app

from oracle_core import Oracle, PluginManifest, Settings, hookimpl, tool
from oracle_core.server import create_app
from oracle_core.store import MemoryCheckpointer

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).resolve().parents[2] / "mcp_server.py")
META = ["list_capabilities", "load_capability", "search_capabilities"]


class Notes:
    """A code plugin with one on-demand tool and one silent tool."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name="notes", summary="Counts notes.", when_to_use=["notes"])

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        @tool
        def note_count(folder: str) -> int:
            """How many notes a folder holds."""
            return len(folder)

        @tool(approval=True)
        def note_delete(folder: str) -> str:
            """Delete a folder of notes."""
            raise AssertionError("ran without approval")

        return [note_count, note_delete]


class Recorder:
    """Collects the notifications an MCP client receives."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method:
            self.methods.append(method)
        if method == "notifications/tools/list_changed":
            self.changed.set()


async def _walk(client: Client, recorder: Recorder, hidden: str, arguments: dict[str, Any],
                plugin: str) -> dict[str, Any]:  # fmt: skip
    """List, refuse a hidden call, load, see list_changed, list again, call."""
    seen: dict[str, Any] = {}
    seen["before"] = [t.name for t in (await client.list_tools()).tools]
    refused = await client.call_tool(hidden, arguments)
    seen["refused"] = (refused.is_error, refused.content[0].text)
    loaded = await client.call_tool("load_capability", {"names": [plugin]})
    seen["loaded"] = json.loads(loaded.content[0].text)[0]["name"]
    with anyio.fail_after(10):
        await recorder.changed.wait()
    listed = (await client.list_tools()).tools
    seen["after"] = [t.name for t in listed]
    seen["schema"] = next(t.input_schema for t in listed if t.name == hidden)
    called = await client.call_tool(hidden, arguments)
    seen["called"] = (called.is_error, called.content[0].text)
    unknown = await client.call_tool("no_such_tool", {})
    seen["unknown"] = (unknown.is_error, unknown.content[0].text)
    return seen


def test_oracle_mcp_over_stdio_lists_loads_announces_and_gates(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text(
        f"[mcp.arith]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
    )
    env = {**os.environ, "ORACLE_HOME": str(tmp_path), "ORACLE_LOAD_PLUGINS": "arith"}
    oracle = str(Path(sys.executable).with_name("oracle"))
    params = StdioServerParameters(command=oracle, args=["mcp", "--thread", "ide"], env=env)
    recorder = Recorder()

    async def scenario() -> dict[str, Any]:
        async with Client(params, mode="legacy", message_handler=recorder, cache=None) as client:
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is True
            return await _walk(client, recorder, "arith_add", {"a": 2, "b": 3}, "arith")

    seen = anyio.run(scenario)

    assert seen["before"] == META
    assert seen["refused"][0] is True
    assert json.loads(seen["refused"][1])["error"] == (
        "Tool 'arith_add' is not available yet: call load_capability"
        '({"names": ["arith"]}) first, then call the tool again.'
    )
    assert seen["loaded"] == "arith"
    assert recorder.methods.count("notifications/tools/list_changed") == 1
    assert seen["after"][:3] == META and "arith_add" in seen["after"]
    assert seen["schema"]["required"] == ["a", "b"]
    assert seen["called"] == (False, '{"result": 5}')
    assert seen["unknown"][0] is True and "does not exist" in seen["unknown"][1]


def test_a_2026_client_over_stdio_hears_of_the_load_through_subscriptions_listen(
    tmp_path: Path,
) -> None:
    (tmp_path / "oracle.toml").write_text(
        f"[mcp.arith]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
    )
    env = {**os.environ, "ORACLE_HOME": str(tmp_path), "ORACLE_LOAD_PLUGINS": "arith"}
    oracle = str(Path(sys.executable).with_name("oracle"))
    params = StdioServerParameters(command=oracle, args=["mcp"], env=env)

    async def scenario() -> tuple[str, Any, list[str]]:
        async with Client(params) as client:
            async with client.listen(tools_list_changed=True) as events:
                await client.call_tool("load_capability", {"names": ["arith"]})
                with anyio.fail_after(10):
                    event = await events.__anext__()
            tools = (await client.list_tools(cache_mode="refresh")).tools
            return client.protocol_version, event, [t.name for t in tools]

    version, event, tools = anyio.run(scenario)

    assert version == "2026-07-28"
    assert type(event).__name__ == "ToolsListChanged"
    assert "arith_add" in tools


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path)})
    oracle = Oracle([Notes()], entry_points=False, settings=settings,
                    checkpointer=MemoryCheckpointer())  # fmt: skip
    with serve_app(create_app(oracle, tokens="tok")) as base:
        yield f"{base}/mcp"


def _http(url: str, token: str | None) -> Any:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0))
    return http, streamable_http_client(url, http_client=http)


def test_mcp_on_oracle_serve_is_the_same_surface_one_thread_per_session(served: str) -> None:
    first, second = Recorder(), Recorder()

    async def scenario() -> tuple[dict[str, Any], list[str]]:
        http, transport = _http(served, "tok")
        async with http, Client(transport, mode="legacy", message_handler=first,
                                cache=None) as client:  # fmt: skip
            seen = await _walk(client, first, "note_count", {"folder": "abcd"}, "notes")
        http, transport = _http(served, "tok")
        async with http, Client(transport, mode="legacy", message_handler=second,
                                cache=None) as other:  # fmt: skip
            fresh = [t.name for t in (await other.list_tools()).tools]
        return seen, fresh

    seen, fresh = anyio.run(scenario)

    assert seen["before"] == META
    assert seen["refused"][0] is True and "load_capability" in seen["refused"][1]
    assert seen["after"] == [*META, "note_count", "note_delete"]
    assert seen["called"] == (False, "4")
    assert fresh == META  # a new session is a new thread: nothing loaded


def test_a_call_that_needs_approval_is_not_run_and_says_what_is_pending(served: str) -> None:
    async def scenario() -> Any:
        http, transport = _http(served, "tok")
        async with http, Client(transport, mode="legacy", cache=None) as client:
            await client.call_tool("load_capability", {"names": ["notes"]})
            return await client.call_tool("note_delete", {"folder": "all"})

    result = anyio.run(scenario)

    assert result.is_error is False  # held for a person, not failed (this client cannot ask)
    body = json.loads(result.content[0].text)
    assert body["waiting"] == "waiting_for_approval"
    assert "note_delete was not run" in body["message"]
    assert f"oracle operations approve {body['operation']}" in body["message"]


def test_a_client_in_auto_mode_is_led_to_the_handshake_so_its_session_keeps_a_thread(
    served: str,
) -> None:
    async def scenario() -> tuple[str, list[str]]:
        http, transport = _http(served, "tok")
        async with http, Client(transport, cache=None) as client:
            await client.call_tool("load_capability", {"names": ["notes"]})
            tools = (await client.list_tools(cache_mode="refresh")).tools
            return client.protocol_version, [t.name for t in tools]

    version, tools = anyio.run(scenario)

    assert version != "2026-07-28"
    assert "note_count" in tools


def test_mcp_on_oracle_serve_needs_the_servers_token(served: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    headers = {"Accept": "application/json, text/event-stream"}

    missing = httpx.post(served, json=body, headers=headers)
    wrong = httpx.post(served, json=body, headers={**headers, "Authorization": "Bearer nope"})

    assert missing.status_code == 401
    assert wrong.status_code == 401
    assert wrong.json()["error"]["type"] == "unauthorized"

    async def scenario() -> None:
        http, transport = _http(served, None)
        async with http:
            with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a 401
                async with Client(transport, mode="legacy", cache=None) as client:
                    await client.list_tools()

    anyio.run(scenario)


def test_bad_calls_from_an_mcp_client_are_tool_errors_and_never_run(served: str) -> None:
    rng = random.Random(5)
    names = ["", "x" * 5000, "../../etc/passwd", "note_count\u0000", "LIST_CAPABILITIES",
             "load_capability ", "note_delete", "note_count"]  # fmt: skip
    arguments: list[Any] = [{}, {"folder": 1}, {"folder": "a" * 300_000}, {"nope": True},
                            {"folder": None}, {"names": "notes"}]  # fmt: skip

    async def scenario() -> list[Any]:
        http, transport = _http(served, "tok")
        seen = []
        async with http, Client(transport, mode="legacy", cache=None) as client:
            for _ in range(25):
                name, args = rng.choice(names), rng.choice(arguments)
                try:
                    result = await client.call_tool(name, args)
                except Exception as error:  # the SDK or the body limit refused the request
                    seen.append(("refused", type(error).__name__))
                    continue
                seen.append((name, result.is_error, result.content[0].text[:200]))
            tools = [t.name for t in (await client.list_tools()).tools]
        return [*seen, tools]

    *seen, tools = anyio.run(scenario)

    assert tools == META  # nothing was loaded by any of it
    assert all(entry[1] is True for entry in seen if entry[0] != "refused")
    assert not any("ran without approval" in str(entry) for entry in seen)
