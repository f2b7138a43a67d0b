"""The capability gate as a unit: what a request shows, which calls may run, the refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support import make_plugin

from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.gate import SPECIALIST_REFUSAL, Gate
from oracle_core.capabilities.meta_tools import GET_OPERATION_TOOL, META_TOOLS
from oracle_core.capabilities.surface import Specialist
from oracle_core.errors import SurfaceError
from oracle_core.plugins.registry import Registry
from oracle_core.values.messages import ToolCall


def _never(**_: Any) -> Any:
    raise AssertionError("not called")


def make_tool(name: str, visibility: str | None = None) -> Tool:
    return Tool(name, f"{name} does it.", {"type": "object"}, _never, visibility)  # type: ignore[arg-type]


def catalog() -> Registry:
    plugins = (
        make_plugin("kit", make_tool("kit_tool"), visibility="always"),
        make_plugin("weather", make_tool("get_forecast"), make_tool("get_alerts")),
        make_plugin("calendar", make_tool("create_event")),
        make_plugin("internal", make_tool("internal_tool"), visibility="silent"),
    )
    return Registry(plugins={p.name: p for p in plugins})


def names(tools: tuple[Tool, ...]) -> list[str]:
    return [t.name for t in tools]


def call(name: str) -> ToolCall:
    return ToolCall(id="call_1", name=name, arguments="{}", thread_id="t", run_id="run_1")


META = [t.name for t in META_TOOLS]


def test_the_catalog_shows_the_meta_tools_then_standing_tools_then_loads_in_load_order() -> None:
    gate = Gate(catalog())

    assert names(gate.tools([])) == [*META, "kit_tool", "internal_tool"]
    assert names(gate.tools(["calendar", "weather"])) == [
        *META,
        "kit_tool",
        "internal_tool",
        "create_event",
        "get_forecast",
        "get_alerts",
    ]


def test_a_load_only_appends_so_the_shown_prefix_stays_the_same() -> None:
    gate = Gate(catalog())

    before, after = gate.tools(["weather"]), gate.tools(["weather", "calendar"])

    assert after[: len(before)] == before


def test_a_plugin_loaded_twice_is_shown_once_and_unknown_loads_show_nothing() -> None:
    gate = Gate(catalog())

    assert gate.tools(["weather", "weather", "gone"]) == gate.tools(["weather"])


def test_the_tool_list_of_one_loaded_set_is_one_shared_tuple() -> None:
    gate = Gate(catalog())

    assert gate.tools(["weather"]) is gate.tools(["weather"])


def test_get_operation_is_shown_after_the_three_meta_tools_only_when_asked() -> None:
    gate = Gate(catalog())

    shown = gate.tools(["weather"], operations=True)

    assert shown[:4] == (*META_TOOLS, GET_OPERATION_TOOL)
    assert shown[4:] == gate.tools(["weather"])[3:]
    assert GET_OPERATION_TOOL not in gate.tools(["weather"])


def test_a_specialist_surface_shows_exactly_its_tools_whatever_is_loaded() -> None:
    gate = Gate(catalog(), Specialist(["weather.get_alerts", "kit.kit_tool"]))

    assert names(gate.tools([])) == ["get_alerts", "kit_tool"]
    assert gate.tools(["calendar"], operations=True) == gate.tools([])


def test_a_specialist_surface_naming_an_unknown_tool_is_refused_when_the_gate_is_made() -> None:
    with pytest.raises(SurfaceError, match="no tool"):
        Gate(catalog(), Specialist(["weather.get_radar"]))


def test_a_call_may_run_only_if_its_tool_was_chosen_and_sent() -> None:
    gate = Gate(catalog())
    chosen = gate.names(["weather"])
    sent = {*(n for n in chosen if n != "get_alerts"), "create_event"}

    shown = gate.shown(chosen, sent)

    assert "get_forecast" in shown
    assert "get_alerts" not in shown  # removed by a middleware: chosen, not sent
    assert "create_event" not in shown  # added by a middleware: sent, not chosen
    assert gate.shown(chosen).names == frozenset(names(gate.tools(["weather"])))


def test_a_shown_call_passes_and_another_gets_the_refusal() -> None:
    gate = Gate(catalog())
    shown = gate.shown(gate.names([]))

    assert shown.check(call("kit_tool"), []) is None
    refused = shown.check(call("get_forecast"), [])
    assert refused is not None and refused.refused and refused.is_error
    assert refused.call_id == "call_1" and refused.name == "get_forecast"
    assert json.loads(refused.content) == {"error": gate.refusal("get_forecast", [])}


def test_the_refusal_says_what_to_load_and_names_no_other_hidden_tool() -> None:
    gate = Gate(catalog())

    message = gate.refusal("get_forecast", [])

    assert '{"names": ["weather"]}' in message
    assert "get_alerts" not in message and "calendar" not in message


def test_a_tool_whose_capability_loaded_meanwhile_is_called_again() -> None:
    message = Gate(catalog()).refusal("get_forecast", ["weather"])

    assert "is loaded now" in message and "call the tool again" in message


@pytest.mark.parametrize("name", ["nothing_like_it", "internal_tool", "kit_tool"])
def test_an_unknown_silent_or_always_tool_gets_the_same_answer(name: str) -> None:
    gate = Gate(catalog())

    message = gate.refusal(name, [])

    assert message == gate.refusal("nothing_like_it", []).replace(
        repr("nothing_like_it"), repr(name)
    )
    assert "does not exist" in message


def test_a_refusal_on_a_specialist_surface_names_nothing_to_load() -> None:
    gate = Gate(catalog(), Specialist(["weather.get_alerts"]))

    assert gate.refusal("get_forecast", []) == SPECIALIST_REFUSAL.format(name="'get_forecast'")
    assert gate.refusal("load_capability", []) == SPECIALIST_REFUSAL.format(
        name="'load_capability'"
    )


def test_a_long_name_is_cut_in_the_refusal() -> None:
    message = Gate(catalog()).refusal("x" * 5000, [])

    assert len(message) < 300
