"""The meta-tools as tools over a run's capability state, and the executor that runs them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from support import make_plugin

from oracle_core.authoring.tools.decorator import tool
from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools import GET_OPERATION_TOOL, META_TOOLS, NO_FIT_NOTE
from oracle_core.capabilities.state import Capabilities, CapabilityState
from oracle_core.errors import PluginConflictError
from oracle_core.plugins.core_tools import (
    GET_OPERATION,
    LIST_CAPABILITIES,
    LOAD_CAPABILITY,
    META_TOOL_NAMES,
    SEARCH_CAPABILITIES,
)
from oracle_core.plugins.registry import BoundTool, Registry
from oracle_core.run.executor import ToolExecutor
from oracle_core.values.limits import RunLimits
from oracle_core.values.messages import ToolCall, ToolResult


def _forecast(city: str = "Paris") -> str:
    """The forecast of a city."""
    return f"sunny in {city}"


def make_tool(name: str) -> Tool:
    return tool(name=name)(_forecast)


def catalog() -> Registry:
    plugins = (
        make_plugin("weather", make_tool("get_forecast")),
        make_plugin("calendar", make_tool("create_event")),
        make_plugin("internal", make_tool("internal_tool"), visibility="silent"),
    )
    return Registry(plugins={p.name: p for p in plugins})


def call(name: str, arguments: Mapping[str, Any] | None = None, number: int = 1) -> ToolCall:
    return ToolCall(
        id=f"call_{number}",
        name=name,
        arguments=json.dumps(dict(arguments or {})),
        thread_id="t",
        run_id="run_1",
    )


async def run(state: CapabilityState, name: str, **arguments: Any) -> ToolResult:
    tool = state.resolve(name)
    assert tool is not None and not isinstance(tool, BoundTool)
    return await tool(call(name), arguments)


class Operations:
    """Stands in for the background work that answers ``get_operation``."""

    def __init__(self) -> None:
        self.asked: list[Mapping[str, Any]] = []

    async def get_operation(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        self.asked.append(arguments)
        return ToolResult(call.id, call.name, json.dumps({"id": arguments.get("id")}))


class Search:
    """Stands in for the capability search: every query finds nothing."""

    def __init__(self) -> None:
        self.queries: list[Sequence[str]] = []

    def search(self, queries: Sequence[str]) -> list[list[Any]]:
        self.queries.append(queries)
        return [[] for _ in queries]


def test_the_loaded_set_keeps_its_order_and_each_name_once() -> None:
    state = Capabilities(catalog()).state(["weather", "calendar", "weather"])

    state.load(["calendar", "notes", "weather", "notes"])

    assert state.loaded == ("weather", "calendar", "notes")
    assert state.new == ("notes",)


def test_a_name_resolves_to_a_meta_tool_a_plugin_tool_or_nothing() -> None:
    state = Capabilities(catalog()).state()

    for name in (LIST_CAPABILITIES, LOAD_CAPABILITY, SEARCH_CAPABILITIES):
        tool = state.resolve(name)
        assert tool is not None and not isinstance(tool, BoundTool)
        assert tool.tool.name == name
    bound = state.resolve("get_forecast")
    assert isinstance(bound, BoundTool) and bound.plugin.name == "weather"
    assert state.resolve("nothing_like_it") is None


def test_the_meta_tools_are_shown_with_the_schemas_the_model_always_gets() -> None:
    state = Capabilities(catalog(), operations=Operations()).state()

    shown = [state.resolve(t.name).tool for t in (*META_TOOLS, GET_OPERATION_TOOL)]  # type: ignore[union-attr]

    assert shown == [*META_TOOLS, GET_OPERATION_TOOL]
    assert set(state.tools) == META_TOOL_NAMES


def test_get_operation_exists_only_with_operations_to_ask() -> None:
    assert Capabilities(catalog()).state().resolve(GET_OPERATION) is None


async def test_get_operation_asks_the_operations() -> None:
    operations = Operations()
    state = Capabilities(catalog(), operations=operations).state()

    result = await run(state, GET_OPERATION, id="op_1")

    assert json.loads(result.content) == {"id": "op_1"}
    assert operations.asked == [{"id": "op_1"}]


async def test_a_load_changes_the_state_at_once_and_says_what_it_loaded() -> None:
    state = Capabilities(catalog()).state(["calendar"])

    result = await run(state, LOAD_CAPABILITY, names=["weather", "calendar"])

    assert not result.is_error and result.loaded == ("weather",)
    assert state.loaded == ("calendar", "weather") and state.new == ("weather",)
    [weather, calendar] = json.loads(result.content)
    assert not weather["alreadyAvailable"] and calendar["alreadyAvailable"]


async def test_a_bad_name_loads_nothing() -> None:
    state = Capabilities(catalog()).state()

    result = await run(state, LOAD_CAPABILITY, names=["weather", "internal"])

    assert result.is_error and result.loaded == ()
    assert state.loaded == () and "internal and cannot be loaded" in result.content


async def test_two_loads_of_one_response_both_succeed() -> None:
    state = Capabilities(catalog()).state()
    load = state.resolve(LOAD_CAPABILITY)
    assert load is not None and not isinstance(load, BoundTool)

    first, second = await asyncio.gather(
        load(call(LOAD_CAPABILITY, number=1), {"names": ["weather"]}),
        load(call(LOAD_CAPABILITY, number=2), {"names": ["calendar", "weather"]}),
    )

    assert not first.is_error and not second.is_error
    assert first.loaded == ("weather",) and second.loaded == ("calendar",)
    assert state.loaded == ("weather", "calendar")


async def test_the_listing_sees_the_loads_of_the_state() -> None:
    state = Capabilities(catalog()).state()

    await run(state, LOAD_CAPABILITY, names=["weather"])
    listed = {
        e["name"]: e["loaded"] for e in json.loads((await run(state, LIST_CAPABILITIES)).content)
    }

    assert listed == {"weather": True, "calendar": False}


async def test_the_search_is_made_once_and_shared_by_every_state() -> None:
    capabilities = Capabilities(catalog())
    search = Search()
    made: list[int] = []

    def fake() -> Any:
        made.append(1)
        return search

    capabilities.search = fake  # type: ignore[method-assign]

    result = await run(capabilities.state(), SEARCH_CAPABILITIES, queries=["rain"])
    await run(capabilities.state(), SEARCH_CAPABILITIES, queries=["meetings"])

    assert json.loads(result.content) == [{"query": "rain", "results": [], "note": NO_FIT_NOTE}]
    assert search.queries == [["rain"], ["meetings"]] and len(made) == 2


def test_the_capability_search_is_built_once() -> None:
    pytest.importorskip("numpy")
    capabilities = Capabilities(catalog())

    assert capabilities.search() is capabilities.search()


async def test_a_failing_search_is_an_error_result_not_an_exception() -> None:
    capabilities = Capabilities(catalog())

    def broken() -> Any:
        raise OSError("the index is gone")

    capabilities.search = broken  # type: ignore[method-assign]

    result = await run(capabilities.state(), SEARCH_CAPABILITIES, queries=["rain"])

    assert result.is_error and isinstance(result.error, OSError)
    assert json.loads(result.content) == {"error": "search_capabilities failed: the index is gone"}


async def test_the_executor_runs_a_meta_tool_over_the_state_it_is_given() -> None:
    registry = catalog()
    executor = ToolExecutor(registry, RunLimits())
    state = executor.capabilities.state()

    result = await executor.execute(call(LOAD_CAPABILITY, {"names": ["weather"]}), state)

    assert not result.is_error and state.loaded == ("weather",)


async def test_the_executor_caps_a_meta_tool_result_like_any_other() -> None:
    executor = ToolExecutor(catalog(), RunLimits(max_result_bytes=40))

    result = await executor.execute(call(LIST_CAPABILITIES), executor.capabilities.state())

    assert "[cut:" in result.content


async def test_the_executor_runs_a_plugin_tool_and_refuses_an_unknown_name() -> None:
    executor = ToolExecutor(catalog(), RunLimits())

    state = executor.capabilities.state(["weather"])
    ran = await executor.execute(call("get_forecast", {"city": "Oslo"}), state)
    unknown = await executor.execute(call("get_radar"), state)

    assert ran.value == "sunny in Oslo"
    assert unknown.is_error and "does not exist" in unknown.content


@pytest.mark.parametrize("name", [*sorted(META_TOOL_NAMES), "Load_Capability"])
def test_the_registry_refuses_a_plugin_tool_called_like_a_meta_tool(name: str) -> None:
    shadow = make_plugin("shadow", make_tool(name))

    with pytest.raises(PluginConflictError, match="meta-tool"):
        Registry(plugins={"shadow": shadow})
