"""The clock plugin as the core and the model see it: conformance, the gate, settings."""

from __future__ import annotations

import json
from importlib.metadata import entry_points

import oracle_plugin_clock

from oracle_core.testing import (
    OracleFactory,
    ScriptedModel,
    assert_shown,
    assert_tool_called,
    call_tool,
    check_plugin,
    run_turn,
)

CLOCK_TOOLS = ["current_time", "convert_time", "time_difference"]


def test_conforms() -> None:
    check_plugin(oracle_plugin_clock)


def test_the_plugin_is_on_demand_with_three_tools(oracle_factory: OracleFactory) -> None:
    plugin = oracle_factory(oracle_plugin_clock).registry.plugins["clock"]

    assert plugin.visibility == "on-demand"
    assert [t.name for t in plugin.tools] == CLOCK_TOOLS


def test_tool_schemas_show_the_model_only_its_arguments() -> None:
    schema = oracle_plugin_clock.convert_time.parameters

    assert set(schema["properties"]) == {"time", "from_timezone", "to_timezone"}
    assert schema["required"] == ["time", "from_timezone", "to_timezone"]


async def test_the_model_loads_the_clock_then_reads_the_time(
    oracle_factory: OracleFactory, oracle_model: ScriptedModel
) -> None:
    oracle = oracle_factory(oracle_plugin_clock, config={"clock": {"now": "2026-03-01T12:00:00Z"}})
    oracle_model.reply_tool_call("load_capability", {"names": ["clock"]})
    oracle_model.reply_tool_call("current_time", {"timezone": "Asia/Tokyo"})
    oracle_model.reply_text("It is 21:00 in Tokyo.")

    result = await run_turn(oracle, "What time is it in Tokyo?")

    assert result.answer == "It is 21:00 in Tokyo."
    assert result.loaded == ["clock"]
    reading = assert_tool_called(result, "current_time", {"timezone": "Asia/Tokyo"})
    assert json.loads(reading.content)["time"] == "2026-03-01T21:00:00+09:00"
    assert_shown(oracle_model.request(1), hidden=CLOCK_TOOLS)
    assert_shown(oracle_model.request(2), tools=CLOCK_TOOLS)


async def test_now_from_the_environment_reaches_the_tools(oracle_factory: OracleFactory) -> None:
    oracle = oracle_factory(
        oracle_plugin_clock, env={"ORACLE_PLUGIN_CLOCK__NOW": "2026-03-01T12:00:00Z"}
    )

    result = await call_tool(oracle, "current_time", {"timezone": "Asia/Tokyo"})

    assert result["time"] == "2026-03-01T21:00:00+09:00"


def test_bad_now_setting_leaves_the_plugin_out_naming_the_key(
    oracle_factory: OracleFactory,
) -> None:
    oracle = oracle_factory(
        oracle_plugin_clock, env={"ORACLE_PLUGIN_CLOCK__NOW": "noon"}, strict=False
    )

    assert "clock" not in oracle.registry.plugins
    [failure] = oracle.registry.failures
    assert failure.plugin == "clock"
    assert "ORACLE_PLUGIN_CLOCK__NOW" in str(failure)


def test_installed_distribution_registers_the_entry_point() -> None:
    [entry] = entry_points(group="oracle.plugins", name="clock")

    assert entry.dist is not None and entry.dist.name == "oracle-plugin-clock"
    assert entry.load().oracle_manifest().name == "clock"
