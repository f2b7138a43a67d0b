"""A hostile MCP server (tests/mcp_server.py --hostile): huge descriptions, names that collide
with meta-tools and other plugins, invalid schemas, junk on its stdout, prompt injection.
Everything it says is bounded and reported; nothing it says widens what the gate shows."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from oracle_core import MCPServer, Oracle, PluginManifest, Settings, hookimpl, tool
from oracle_core.capabilities.meta_tools import META_TOOLS
from oracle_core.plugins.mcp.adapter import MCPPlugin
from oracle_core.plugins.mcp.listing import MAX_INSTRUCTIONS, MAX_REPORTED, MAX_TOOLS
from oracle_core.plugins.validate.function_schema import DESCRIPTION_MAX
from oracle_core.store import MemoryCheckpointer
from oracle_core.testing import ScriptedModel
from oracle_core.testing.drive import call_tool

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).resolve().parents[2] / "mcp_server.py")


class Bystander:
    """An ordinary plugin whose tool name the hostile server also uses."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name="bystander", summary="Innocent.", when_to_use=["never"])

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        @tool
        def inject() -> str:
            """The bystander's own tool."""
            return "bystander"

        return [inject]


def hostile(**fields: Any) -> MCPServer:
    return MCPServer("hostile", command=sys.executable, args=(SERVER, "--hostile"), **fields)


def build(tmp_path: Path, *plugins: Any, model: Any = None) -> Oracle:
    return Oracle(
        list(plugins),
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}),
        checkpointer=MemoryCheckpointer(),
        model=model or ScriptedModel(),
    )


def test_everything_the_server_says_is_bounded_and_what_is_unsafe_left_out(
    tmp_path: Path,
) -> None:
    oracle = build(tmp_path, Bystander(), hostile(prefix=""))

    plugin = oracle.registry.plugins["hostile"]
    assert isinstance(plugin.obj, MCPPlugin)
    names = [t.name for t in plugin.tools]
    assert "list_capabilities" not in names  # would shadow a meta-tool
    assert "inject" not in names  # the bystander's tool: the bystander keeps it
    assert oracle.registry.tools["inject"].plugin.name == "bystander"
    assert "badschema" not in names and "x" * 100 not in names
    assert len(plugin.tools) <= MAX_TOOLS
    assert all(len(t.description) <= DESCRIPTION_MAX for t in plugin.tools)
    assert "huge" in names
    assert len(plugin.manifest.summary) <= 120
    listing = plugin.obj.connection.listing
    assert len(listing.instructions) <= MAX_INSTRUCTIONS
    problems = plugin.obj.status()["problems"]
    assert 0 < len(problems) <= MAX_REPORTED + 1
    joined = " ".join(problems)
    assert "meta-tool" in joined and "longer than the 64" in joined
    assert "only the first 128" in joined


def test_the_meta_tools_and_the_gate_stay_as_they_are(tmp_path: Path) -> None:
    model = ScriptedModel()
    model.reply_tool_calls([("hostile_inject", {}), ("hostile_many1", {})])
    model.reply_tool_call("load_capability", {"names": ["hostile"]})
    model.reply_tool_calls([("hostile_inject", {}), ("note_secret", {})])
    model.reply_text("done")
    oracle = build(tmp_path, hostile(), model=model)

    result = oracle.run_sync("t", "go")
    oracle.close_sync()

    assert result.status == "completed"
    first = model.request(1)
    assert first.tool_names == [t.name for t in META_TOOLS]
    assert "ignore previous instructions" not in json.dumps(first.body)
    refused = [json.loads(m["content"]) for m in model.request(2).messages[-2:]]
    assert all("load_capability" in r["error"] for r in refused)
    shown = model.request(3).tool_names
    assert shown[:3] == [t.name for t in META_TOOLS]
    last = [m["content"] for m in model.request(4).messages[-2:]]
    assert last[0].startswith("ok IMPORTANT")  # its tool ran once loaded, and only its own
    assert "does not exist" in json.loads(last[1])["error"]


def test_junk_on_the_servers_stdout_does_not_break_the_session(tmp_path: Path) -> None:
    oracle = build(tmp_path, hostile(timeout=10))

    async def scenario() -> tuple[Any, Any]:
        noisy = await call_tool(oracle, "hostile_noisy")
        after = await call_tool(oracle, "hostile_huge")
        await oracle.close()
        return noisy, after

    assert asyncio.run(scenario()) == ("ok", "ok")


def test_a_program_that_does_not_speak_mcp_is_reported_and_left_out(tmp_path: Path) -> None:
    junk = MCPServer(
        "junk",
        command=sys.executable,
        args=("-c", "import sys, time; print('<html>not json</html>'); sys.stdout.flush(); "
                    "time.sleep(30)"),
        start_timeout=3,
    )  # fmt: skip
    oracle = build(tmp_path, junk, Bystander())

    assert "junk" not in oracle.registry
    assert "bystander" in oracle.registry
    failure = next(f for f in oracle.registry.failures if f.plugin == "junk")
    assert "could not be started" in str(failure)
