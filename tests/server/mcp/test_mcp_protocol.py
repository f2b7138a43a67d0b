"""The oracle over MCP as a client sees the protocol: capabilities declared as the server
behaves, a thread pinned by ``X-Oracle-Thread``, plugins' prompts and resources under the
gate's rule, ``ping`` and ``logging/setLevel``. Driven with the SDK's own client against
``/mcp`` on ``oracle serve`` (uvicorn on 127.0.0.1) and ``oracle mcp`` (a real subprocess)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install -e '.[mcp]'")

import base64
import json
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_peers import connect, serve

from oracle_core import (
    Oracle,
    PluginManifest,
    Prompt,
    PromptArgument,
    Resource,
    Settings,
    hookimpl,
    tool,
)
from oracle_core.store import MemoryCheckpointer

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).resolve().parents[2] / "mcp_server.py")
META = ["list_capabilities", "load_capability", "search_capabilities"]


class Notes:
    """An on-demand plugin with a tool, a prompt and a resource."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name="notes", summary="Keeps notes.", when_to_use=["notes"])

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        @tool
        async def note_count(folder: str) -> int:
            """How many notes a folder holds."""
            logging.getLogger("oracle_plugin_notes").warning("counted %s", folder)
            return len(folder)

        return [note_count]

    @hookimpl
    def oracle_prompts(self) -> list[Prompt]:
        async def summarize(folder: str, tone: str = "plain") -> list[dict[str, str]]:
            return [
                {"role": "user", "content": f"Summarize the notes in {folder}, {tone}."},
                {"role": "assistant", "content": "Which notes matter most?"},
            ]

        return [
            Prompt(
                "summarize_notes",
                summarize,
                description="Summarize a folder of notes.",
                arguments=[PromptArgument("folder", "the folder", required=True),
                           PromptArgument("tone")],
            )
        ]  # fmt: skip

    @hookimpl
    def oracle_resources(self) -> list[Resource]:
        return [Resource("notes://index", "Note index", lambda: "# Index\n- groceries")]


class Guide:
    """An always-on plugin: its prompt and resource are listed to every session at once."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name="guide", summary="House style.", when_to_use=["writing"],
                              visibility="always")  # fmt: skip

    @hookimpl
    def oracle_prompts(self, config: Any) -> list[Prompt]:
        return [Prompt("house_style", lambda: "Write short sentences.", title="House style")]

    @hookimpl
    def oracle_resources(self) -> list[Resource]:
        async def logo() -> bytes:
            return b"\x89PNG\r\n"

        return [Resource("guide://logo", "Logo", logo, mime_type="image/png")]


class Quiet:
    """A silent plugin: never listed in the catalog, but its prompt is shown like its tools."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name="quiet", summary="Background help.", visibility="silent")

    @hookimpl
    def oracle_prompts(self) -> list[Prompt]:
        return [Prompt("quiet_tip", lambda: "A tip.")]


class Broken:
    """Its prompts hook raises, and its resource takes a URI another plugin has."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name="broken", summary="Breaks.", when_to_use=["never"],
                              visibility="always")  # fmt: skip

    @hookimpl
    def oracle_prompts(self) -> list[Prompt]:
        raise RuntimeError("no prompts today")

    @hookimpl
    def oracle_resources(self) -> list[Resource]:
        return [Resource("notes://index", "Impostor", lambda: "not the index")]


class Plain:
    """A plugin with a tool only."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name="plain", summary="Plain tools.", when_to_use=["plain"])

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        @tool
        def plain_echo(text: str) -> str:
            """Echo the text."""
            return text

        return [plain_echo]


class Recorder:
    """Collects the notifications an MCP client receives."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method:
            self.methods.append(method)
        if method == "notifications/resources/list_changed":  # the last a load sends
            self.changed.set()


def serving(tmp_path: Path, *plugins: Any) -> Any:
    """:func:`serve` of an oracle of ``plugins`` (a memory store)."""
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path)})
    oracle = Oracle(list(plugins), entry_points=False, settings=settings,
                    checkpointer=MemoryCheckpointer())  # fmt: skip
    return serve(oracle)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    with serving(tmp_path, Notes(), Guide(), Quiet(), Broken()) as url:
        yield url


@contextmanager
def legacy_only() -> Iterator[None]:
    """``ping`` and ``logging/setLevel``: the SDK warns that 2026-07-28 dropped them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


def stdio(tmp_path: Path, *args: str, toml: str = "") -> StdioServerParameters:
    """``oracle mcp`` in a child process, with the test MCP server imported as ``arith``."""
    server = f"[mcp.arith]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
    (tmp_path / "oracle.toml").write_text(server + toml)
    env = {**os.environ, "ORACLE_HOME": str(tmp_path), "ORACLE_LOAD_PLUGINS": "arith"}
    oracle = str(Path(sys.executable).with_name("oracle"))
    return StdioServerParameters(command=oracle, args=["mcp", *args], env=env)


# -- capabilities --------------------------------------------------------------------------------


def test_mcp_on_oracle_serve_declares_list_changed_since_a_load_sends_it(served: str) -> None:
    async def scenario() -> Any:
        http, client = connect(served)
        async with http, client:
            return client.server_capabilities

    capabilities = anyio.run(scenario)

    assert capabilities.tools is not None and capabilities.tools.list_changed is True
    assert capabilities.prompts is not None and capabilities.prompts.list_changed is True
    assert capabilities.resources is not None and capabilities.resources.list_changed is True
    assert capabilities.logging is not None


def test_prompts_and_resources_are_not_declared_when_no_plugin_offers_any(
    tmp_path: Path,
) -> None:
    async def scenario(url: str) -> tuple[Any, int]:
        http, client = connect(url)
        async with http, client:
            with pytest.raises(MCPError) as refused:
                await client.list_prompts()
            return client.server_capabilities, refused.value.error.code

    with serving(tmp_path, Plain()) as url:
        capabilities, code = anyio.run(scenario, url)

    assert capabilities.prompts is None and capabilities.resources is None
    assert capabilities.tools.list_changed is True
    assert code == -32601  # method not found: it is not served


def test_oracle_mcp_over_stdio_declares_logging_and_answers_ping_and_set_level(
    tmp_path: Path,
) -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        async with Client(stdio(tmp_path), mode="legacy", cache=None) as client:
            with legacy_only():
                pong = await client.send_ping()
                level = await client.set_logging_level("error")
            return client.server_capabilities, pong, level

    capabilities, pong, level = anyio.run(scenario)

    assert capabilities.tools.list_changed is True
    assert capabilities.logging is not None
    assert capabilities.prompts is None  # no plugin of this oracle offers prompts
    assert pong is not None and level is not None


# -- a thread pinned by a header -----------------------------------------------------------------


def test_sessions_pinned_to_one_thread_by_header_share_its_loads(served: str) -> None:
    async def scenario() -> tuple[list[str], list[str], list[str]]:
        http, first = connect(served, thread="team-notes")
        async with http, first:
            await first.call_tool("load_capability", {"names": ["notes"]})
        http, second = connect(served, thread="team-notes")
        async with http, second:
            pinned = [t.name for t in (await second.list_tools()).tools]
        http, other = connect(served)
        async with http, other:
            fresh = [t.name for t in (await other.list_tools()).tools]
        return pinned, fresh, META

    pinned, fresh, meta = anyio.run(scenario)

    assert "note_count" in pinned
    assert fresh == meta  # without the header a session is its own thread


def test_oracle_mcp_thread_pins_the_stdio_session_so_a_second_one_sees_the_load(
    tmp_path: Path,
) -> None:
    params = stdio(tmp_path, "--thread", "shared-ide")

    async def scenario() -> list[str]:
        async with Client(params, mode="legacy", cache=None) as first:
            await first.call_tool("load_capability", {"names": ["arith"]})
        async with Client(params, mode="legacy", cache=None) as second:
            return [t.name for t in (await second.list_tools()).tools]

    assert "arith_add" in anyio.run(scenario)


def test_a_bad_thread_header_is_refused_before_the_session_starts(served: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    headers = {"Accept": "application/json, text/event-stream", "Authorization": "Bearer tok",
               "X-Oracle-Thread": "../etc"}  # fmt: skip

    answer = httpx.post(served, json=body, headers=headers)

    assert answer.status_code == 422
    assert answer.json()["error"]["type"] == "invalid_thread_id"


def test_a_session_cannot_switch_threads_by_header(served: str) -> None:
    async def scenario() -> str:
        http, client = connect(served, thread="first-thread")
        async with http, client:
            await client.list_tools()
            http.headers["X-Oracle-Thread"] = "second-thread"
            with pytest.raises(MCPError) as refused:
                await client.list_tools()
            return refused.value.error.message

    message = anyio.run(scenario)

    assert "works on thread 'first-thread'" in message


# -- prompts and resources -----------------------------------------------------------------------


def test_standing_plugins_prompts_and_resources_are_listed_at_once_on_demand_ones_not(
    served: str,
) -> None:
    async def scenario() -> tuple[list[str], list[str]]:
        http, client = connect(served)
        async with http, client:
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            resources = [r.uri for r in (await client.list_resources()).resources]
            return prompts, resources

    prompts, resources = anyio.run(scenario)

    assert prompts == ["house_style", "quiet_tip"]
    assert resources == ["guide://logo"]


def test_a_load_announces_and_lists_the_plugins_prompts_and_resources(served: str) -> None:
    recorder = Recorder()

    async def scenario() -> tuple[list[Any], list[str], Any, str]:
        http, client = connect(served, message_handler=recorder)
        async with http, client:
            await client.call_tool("load_capability", {"names": ["notes"]})
            with anyio.fail_after(10):
                await recorder.changed.wait()
            prompts = (await client.list_prompts()).prompts
            resources = [r.uri for r in (await client.list_resources()).resources]
            got = await client.get_prompt("summarize_notes", {"folder": "work"})
            read = await client.read_resource("notes://index")
            return prompts, resources, got, read.contents[0].text

    prompts, resources, got, text = anyio.run(scenario)

    assert "notifications/prompts/list_changed" in recorder.methods
    summarize = next(p for p in prompts if p.name == "summarize_notes")
    assert summarize.description == "Summarize a folder of notes."
    assert [(a.name, a.required) for a in summarize.arguments] == [("folder", True),
                                                                    ("tone", False)]  # fmt: skip
    assert resources == ["guide://logo", "notes://index"]
    assert [(m.role, m.content.text) for m in got.messages] == [
        ("user", "Summarize the notes in work, plain."),
        ("assistant", "Which notes matter most?"),
    ]
    assert text == "# Index\n- groceries"  # broken's impostor of this URI was left out


def test_getting_a_prompt_of_a_plugin_not_loaded_is_refused_naming_what_to_load(
    served: str,
) -> None:
    async def scenario() -> tuple[str, str, str]:
        http, client = connect(served)
        async with http, client:
            messages = []
            for call in (
                client.get_prompt("summarize_notes", {"folder": "x"}),
                client.get_prompt("no_such_prompt"),
                client.read_resource("notes://index"),
            ):
                with pytest.raises(MCPError) as refused:
                    await call
                messages.append(refused.value.error.message)
            return messages[0], messages[1], messages[2]

    hidden, unknown, resource = anyio.run(scenario)

    assert hidden == (
        "Prompt 'summarize_notes' is not available yet: call load_capability"
        '({"names": ["notes"]}) first, then get it again.'
    )
    assert unknown.startswith("Prompt 'no_such_prompt' does not exist.")
    assert "notes" not in unknown  # nothing hidden is named
    assert resource.startswith("Resource 'notes://index' is not available yet")


def test_a_prompt_needs_its_required_arguments_and_takes_no_others(served: str) -> None:
    async def scenario() -> list[str]:
        http, client = connect(served)
        async with http, client:
            await client.call_tool("load_capability", {"names": ["notes"]})
            messages = []
            for arguments in ({}, {"folder": "x", "colour": "red"}):
                with pytest.raises(MCPError) as refused:
                    await client.get_prompt("summarize_notes", arguments)
                messages.append(refused.value.error.message)
            return messages

    missing, unknown = anyio.run(scenario)

    assert missing == "prompt 'summarize_notes' needs the argument 'folder'"
    assert unknown == "prompt 'summarize_notes' has no argument 'colour' (it takes: folder, tone)"


def test_sync_and_async_renders_and_reads_text_and_bytes(served: str) -> None:
    async def scenario() -> tuple[Any, Any]:
        http, client = connect(served)
        async with http, client:
            style = await client.get_prompt("house_style")
            logo = await client.read_resource("guide://logo")
            return style, logo.contents[0]

    style, logo = anyio.run(scenario)

    assert [(m.role, m.content.text) for m in style.messages] == [
        ("user", "Write short sentences.")
    ]
    assert logo.mime_type == "image/png"
    assert base64.b64decode(logo.blob) == b"\x89PNG\r\n"


def test_a_plugin_whose_prompts_hook_raises_is_left_out_and_named_in_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(url: str) -> list[str]:
        http, client = connect(url)
        async with http, client:
            return [p.name for p in (await client.list_prompts()).prompts]

    with serving(tmp_path, Guide(), Broken(), Notes()) as url:
        # `oracle serve` keeps the oracle's records to its own handler (no propagation).
        logging.getLogger("oracle_core").addHandler(caplog.handler)
        try:
            prompts = anyio.run(scenario, url)
        finally:
            logging.getLogger("oracle_core").removeHandler(caplog.handler)

    assert prompts == ["house_style"]
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "plugin broken: hook oracle_prompts raised RuntimeError: no prompts today" in logged
    assert "plugin notes: resource 'notes://index' is left out: plugin broken" in logged


def test_an_async_prompts_hook_is_refused_when_the_plugin_is_registered(tmp_path: Path) -> None:
    class Eager:
        @hookimpl
        def oracle_manifest(self) -> PluginManifest:
            return PluginManifest(name="eager", summary="Eager.", when_to_use=["now"])

        @hookimpl
        async def oracle_prompts(self) -> list[Prompt]:
            return []

    oracle = Oracle([Eager()], entry_points=False,
                    settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}))  # fmt: skip

    [failure] = oracle.registry.failures
    assert "eager" not in oracle.registry
    assert "hook oracle_prompts is async, but oracle_prompts is called synchronously" in str(
        failure
    )


# -- logging -------------------------------------------------------------------------------------


def test_set_level_forwards_what_the_sessions_calls_log_at_or_above_it(served: str) -> None:
    received: list[Any] = []

    async def on_log(params: Any) -> None:
        received.append(params)

    async def scenario() -> list[tuple[str, str]]:
        http, client = connect(served, logging_callback=on_log)
        async with http, client:
            await client.call_tool("load_capability", {"names": ["notes"]})
            await client.call_tool("note_count", {"folder": "before"})  # no level yet
            with legacy_only():
                await client.set_logging_level("warning")
            await client.call_tool("note_count", {"folder": "after"})
            with legacy_only():
                await client.set_logging_level("error")
            await client.call_tool("note_count", {"folder": "quiet"})
        return [(p.level, p.data) for p in received]

    assert anyio.run(scenario) == [("warning", "counted after")]
