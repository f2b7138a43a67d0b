"""MCP servers imported as plugins, against a real MCP server (tests/mcp_server.py, the SDK's
MCPServer) run as a stdio subprocess and over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oracle_core import MCPServer, Oracle, Settings, ToolArgumentsError, ToolError
from oracle_core.plugins.mcp.adapter import MCPPlugin
from oracle_core.store import MemoryCheckpointer
from oracle_core.testing import ScriptedModel
from oracle_core.testing.drive import call_tool

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).resolve().parents[2] / "mcp_server.py")


def arith(starts: Path | None = None, **fields: Any) -> MCPServer:
    env = {"MCP_TEST_STARTS": str(starts)} if starts else {}
    fields.setdefault("backoff", 0.01)
    return MCPServer("arith", command=sys.executable, args=(SERVER,), env=env, **fields)


def build(home: Path, *plugins: Any, model: Any = None, **env: str) -> Oracle:
    settings = Settings.from_env({"ORACLE_HOME": str(home), **env})
    return Oracle(
        list(plugins),
        entry_points=False,
        settings=settings,
        checkpointer=MemoryCheckpointer(),
        model=model or ScriptedModel(),
    )


def adapter(oracle: Oracle, name: str = "arith") -> MCPPlugin:
    plugin = oracle.registry.get(name)
    assert plugin is not None, oracle.registry.failures
    assert isinstance(plugin.obj, MCPPlugin)
    return plugin.obj


def starts(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_stdio_server_becomes_an_on_demand_plugin_with_the_servers_schemas(
    tmp_path: Path,
) -> None:
    oracle = build(tmp_path, arith())

    plugin = oracle.registry.get("arith")
    assert plugin is not None
    assert plugin.visibility == "on-demand"
    assert plugin.manifest.summary == "Arithmetic and echo tools for tests."
    assert "mcp" in plugin.manifest.tags
    add = oracle.registry.tools["arith_add"].tool
    assert add.description == "Add two whole numbers."
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert add.parameters["required"] == ["a", "b"]


def test_the_manifest_comes_from_the_definition_when_it_gives_fields(tmp_path: Path) -> None:
    server = arith(summary="Sums for the accounts team.", tags=("Math",), category="finance",
                   when_to_use=("the user asks for a sum",))  # fmt: skip
    manifest = build(tmp_path, server).registry.plugins["arith"].manifest

    assert manifest.summary == "Sums for the accounts team."
    assert manifest.when_to_use == ["the user asks for a sum"]
    assert manifest.tags == ["mcp", "math"]
    assert manifest.category == "finance"


def test_the_listing_is_cached_so_a_second_oracle_starts_no_server_until_a_call(
    tmp_path: Path,
) -> None:
    log = tmp_path / "starts"
    build(tmp_path, arith(log))
    assert starts(log) == 1  # no listing yet: started once at assembly to list its tools

    oracle = build(tmp_path, arith(log))
    assert starts(log) == 1
    assert adapter(oracle).status()["state"] == "idle"

    assert run(call_tool(oracle, "arith_add", {"a": 2, "b": 3})) == {"result": 5}
    assert starts(log) == 2
    run(oracle.close())


def test_a_tool_is_gated_until_its_server_is_loaded_then_called_like_any_tool(
    tmp_path: Path,
) -> None:
    model = ScriptedModel()
    model.reply_tool_call("arith_add", {"a": 1, "b": 2})
    model.reply_tool_call("load_capability", {"names": ["arith"]})
    model.reply_tool_call("arith_add", {"a": 1, "b": 2})
    model.reply_text("3")
    oracle = build(tmp_path, arith(), model=model)

    result = oracle.run_sync("t", "add 1 and 2")
    oracle.close_sync()

    assert result.status == "completed"
    assert "arith_add" not in model.request(1).tool_names
    refused = json.loads(model.request(2).messages[-1]["content"])
    assert "load_capability" in refused["error"]
    assert "arith_add" in model.request(3).tool_names
    assert json.loads(model.request(4).messages[-1]["content"]) == {"result": 3}


def test_search_finds_the_server_by_its_tools(tmp_path: Path) -> None:
    oracle = build(tmp_path, arith())

    found = run(call_tool(oracle, "search_capabilities", {"queries": ["add two numbers"]}))

    assert found[0]["results"][0]["name"] == "arith"


def test_arguments_are_checked_against_the_servers_schema_before_the_call(
    tmp_path: Path,
) -> None:
    log = tmp_path / "starts"
    build(tmp_path, arith(log))
    oracle = build(tmp_path, arith(log))

    with pytest.raises(ToolArgumentsError) as error:
        run(call_tool(oracle, "arith_add", {"a": "two"}))

    assert "'two' is not of type 'integer'" in str(error.value)
    assert "'b' is a required property" in str(error.value)
    assert starts(log) == 1  # the server was never asked


def test_results_map_to_text_structured_content_and_tool_errors(tmp_path: Path) -> None:
    oracle = build(tmp_path, arith())

    async def scenario() -> tuple[Any, str]:
        echoed = await call_tool(oracle, "arith_echo", {"text": "hi"})
        with pytest.raises(ToolError) as failed:
            await call_tool(oracle, "arith_fail", {"reason": "no"})
        await oracle.close()
        return echoed, str(failed.value)

    echoed, failed = run(scenario())
    assert echoed == {"result": "hi"}
    assert "fail" in failed


def test_list_changed_refreshes_the_tools_of_the_running_oracle(tmp_path: Path) -> None:
    oracle = build(tmp_path, arith())
    connection = adapter(oracle).connection

    async def scenario() -> Any:
        before = connection.generation
        assert await call_tool(oracle, "arith_grow") == {"result": "grown"}
        await asyncio.wait_for(connection.next_listing(before), 10)
        shout = await call_tool(oracle, "arith_shout", {"text": "hey"})
        await oracle.close()
        return shout

    assert run(scenario()) == {"result": "HEY"}
    assert "arith_shout" in oracle.registry.tools
    cached = json.loads((tmp_path / "cache" / "mcp" / "arith.json").read_text())
    assert "shout" in [t["name"] for t in cached["tools"]]


def test_a_server_that_exits_mid_session_is_restarted_on_the_next_call(tmp_path: Path) -> None:
    log = tmp_path / "starts"
    oracle = build(tmp_path, arith(log))
    connection = adapter(oracle).connection

    async def scenario() -> Any:
        await call_tool(oracle, "arith_add", {"a": 1, "b": 1})
        with pytest.raises(ToolError) as died:
            await call_tool(oracle, "arith_die")
        assert "restarted" in str(died.value)
        assert connection.state == "crashed"
        again = await call_tool(oracle, "arith_add", {"a": 2, "b": 2})
        await oracle.close()
        return again

    assert run(scenario()) == {"result": 4}
    assert connection.restarts == 1
    assert starts(log) == 3  # the listing at assembly, the first start, the restart


def test_a_server_that_keeps_failing_is_reported_failed_and_its_calls_say_so(
    tmp_path: Path,
) -> None:
    log = tmp_path / "starts"
    build(tmp_path, arith(log))  # cache the listing
    broken = arith(log, max_restarts=1)
    oracle = build(tmp_path, broken)
    connection = adapter(oracle).connection
    connection.definition = arith(log, max_restarts=1, cwd="/nonexistent")

    async def scenario() -> tuple[list[str], str]:
        messages = []
        for _ in range(3):
            with pytest.raises(ToolError) as error:
                await call_tool(oracle, "arith_add", {"a": 1, "b": 1})
            messages.append(str(error.value))
        state = connection.state
        await oracle.close()
        return messages, state

    messages, state = run(scenario())
    assert all("'arith'" in m for m in messages)
    assert state == "failed"
    assert "left out until the oracle restarts" in messages[-1]


def test_a_server_that_cannot_start_is_reported_with_its_name_and_left_out(
    tmp_path: Path,
) -> None:
    bad = MCPServer("ghost", command=str(tmp_path / "no-such-program"), start_timeout=5)
    oracle = build(tmp_path, bad, arith())

    assert "ghost" not in oracle.registry
    assert "arith" in oracle.registry
    failure = next(f for f in oracle.registry.failures if f.plugin == "ghost")
    assert "could not be started to list its tools" in str(failure)


def test_closing_the_oracle_stops_the_server(tmp_path: Path) -> None:
    log = tmp_path / "starts"
    oracle = build(tmp_path, arith(log))

    async def scenario() -> None:
        await call_tool(oracle, "arith_add", {"a": 1, "b": 1})
        await oracle.close()

    run(scenario())
    pid = int(log.read_text().splitlines()[-1])
    assert not _alive(pid)
    assert adapter(oracle).status()["state"] == "stopped"


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in status.lower()


def test_oracle_toml_defines_servers_and_disable_leaves_them_out(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text(
        f"[mcp.arith]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
    )
    assert "arith" in build(tmp_path).registry
    assert "arith" not in build(tmp_path, ORACLE_DISABLE_PLUGINS="arith").registry
    only = build(tmp_path, ORACLE_LOAD_PLUGINS="arith")
    assert "arith" in only.registry
    assert only.registry.failures == []


def test_a_plugin_ships_servers_through_its_hook(tmp_path: Path) -> None:
    from oracle_core import PluginManifest, hookimpl

    class Shipper:
        @hookimpl
        def oracle_manifest(self) -> PluginManifest:
            return PluginManifest(name="shipper", summary="Ships an MCP server.",
                                  when_to_use=["never"], visibility="silent")  # fmt: skip

        @hookimpl
        def oracle_mcp_servers(self) -> list[Any]:
            return [arith(), "not a server"]

    oracle = build(tmp_path, Shipper())

    assert "arith" in oracle.registry
    assert adapter(oracle).definition.origin == "plugin 'shipper'"
    failure = next(f for f in oracle.registry.failures if f.plugin == "shipper")
    assert "returned a str where an MCPServer belongs" in str(failure)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, SERVER, "--http"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{line.split()[1]}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def test_a_streamable_http_server_with_env_headers(tmp_path: Path, http_server: str) -> None:
    (tmp_path / "oracle.toml").write_text(
        f'[mcp.web]\nurl = "{http_server}"\nheaders = {{ Authorization = "$WEB_TOKEN" }}\n'
    )
    oracle = build(tmp_path, WEB_TOKEN="Bearer secret")
    assert "web" in oracle.registry.plugins, oracle.registry.failures

    async def scenario() -> Any:
        value = await call_tool(oracle, "web_add", {"a": 20, "b": 22})
        await oracle.close()
        return value

    assert run(scenario()) == {"result": 42}
    assert adapter(oracle, "web").definition.headers == {"Authorization": "Bearer secret"}
    assert "secret" not in repr(adapter(oracle, "web").definition)


def test_oracle_plugins_shows_mcp_servers_and_their_state(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text(
        f"[mcp.arith]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
    )
    env = {**os.environ, "ORACLE_HOME": str(tmp_path), "ORACLE_LOAD_PLUGINS": "arith"}
    oracle = str(Path(sys.executable).with_name("oracle"))

    text = subprocess.run([oracle, "plugins"], env=env, capture_output=True, text=True)
    data = subprocess.run([oracle, "plugins", "--json"], env=env, capture_output=True, text=True)

    assert "MCP servers" in text.stdout, text.stderr
    assert "arith" in text.stdout and "idle" in text.stdout
    entry = json.loads(data.stdout)["plugins"][0]
    assert entry["mcp"]["state"] == "idle"
    assert entry["mcp"]["transport"] == "stdio"


def test_loading_the_plugin_starts_its_server_in_the_background(tmp_path: Path) -> None:
    log = tmp_path / "starts"
    build(tmp_path, arith(log))
    oracle = build(tmp_path, arith(log))
    connection = adapter(oracle).connection

    async def scenario() -> str:
        await call_tool(oracle, "load_capability", {"names": ["arith"]})
        await asyncio.sleep(0)  # let the start task begin (a yield, not a wait for time)
        state = connection.state
        await asyncio.wait_for(connection.start(), 10)  # joins the start under way
        await oracle.close()
        return state

    assert run(scenario()) == "starting"
    assert starts(log) == 2  # the listing at the first build, then one start for the load


def test_a_tool_the_server_dropped_is_gone_from_the_next_run_and_an_error_in_a_running_one(
    tmp_path: Path,
) -> None:
    oracle = build(tmp_path, arith())
    connection = adapter(oracle).connection
    old_echo = oracle.registry.tools["arith_echo"].tool

    async def scenario() -> str:
        before = connection.generation
        await call_tool(oracle, "arith_forget")
        await asyncio.wait_for(connection.next_listing(before), 10)
        with pytest.raises(ToolError) as error:
            await old_echo.call({"text": "x"})  # as a run that started before the change
        await oracle.close()
        return str(error.value)

    assert "no longer offers the tool 'arith_echo'" in run(scenario())
    assert "arith_echo" not in oracle.registry.tools


def test_calls_that_arrive_together_start_the_server_once(tmp_path: Path) -> None:
    log = tmp_path / "starts"
    build(tmp_path, arith(log))
    oracle = build(tmp_path, arith(log))

    async def scenario() -> list[Any]:
        calls = [call_tool(oracle, "arith_add", {"a": i, "b": 1}) for i in range(4)]
        results = await asyncio.gather(*calls)
        await oracle.close()
        return results

    assert run(scenario()) == [{"result": i + 1} for i in range(4)]
    assert starts(log) == 2  # the listing at the first build, then one start for all four


def test_an_approved_call_of_a_server_tool_runs_once_with_the_saved_arguments(
    tmp_path: Path,
) -> None:
    model = ScriptedModel()
    model.reply_tool_call("load_capability", {"names": ["arith"]})
    model.reply_tool_call("arith_add", {"a": 20, "b": 22})
    model.reply_text("42")
    (tmp_path / "oracle.toml").write_text('[approvals]\ntools = ["arith.arith_add"]\n')
    oracle = build(tmp_path, arith(), model=model)

    waiting = oracle.run_sync("t", "add 20 and 22")
    [operation] = waiting.operations
    done = oracle.decide_sync(operation.id, approve=True)
    oracle.close_sync()

    assert waiting.status == "waiting_for_approval"
    assert json.loads(operation.arguments) == {"a": 20, "b": 22}
    assert done.status == "completed", done.error
    assert json.loads(model.request(3).messages[-1]["content"]) == {"result": 42}
