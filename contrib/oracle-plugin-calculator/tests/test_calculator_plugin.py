"""The calculator plugin as the core and the model see it: conformance, the gate, entry point."""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points

import oracle_plugin_calculator
from oracle_plugin_calculator.units import UNITS

from oracle_core.testing import (
    OracleFactory,
    ScriptedModel,
    assert_shown,
    assert_tool_called,
    check_plugin,
    run_turn,
)

CALCULATOR_TOOLS = ["calculate", "convert_units"]


def test_conforms() -> None:
    check_plugin(oracle_plugin_calculator)


def test_the_plugin_is_on_demand_with_two_tools(oracle_factory: OracleFactory) -> None:
    plugin = oracle_factory(oracle_plugin_calculator).registry.plugins["calculator"]

    assert plugin.visibility == "on-demand"
    assert [t.name for t in plugin.tools] == CALCULATOR_TOOLS


async def test_the_model_loads_the_calculator_then_calculates(
    oracle_factory: OracleFactory, oracle_model: ScriptedModel
) -> None:
    oracle = oracle_factory(oracle_plugin_calculator)
    oracle_model.reply_tool_call("load_capability", {"names": ["calculator"]})
    oracle_model.reply_tool_call("calculate", {"expression": "2340 * 17.5 / 100"})
    oracle_model.reply_text("17.5% of 2,340 is 409.5.")

    result = await run_turn(oracle, "What is 17.5% of 2,340?")

    assert result.answer == "17.5% of 2,340 is 409.5."
    assert result.loaded == ["calculator"]
    answer = assert_tool_called(result, "calculate", {"expression": "2340 * 17.5 / 100"})
    assert json.loads(answer.content) == {"expression": "2340 * 17.5 / 100", "result": 409.5}
    assert_shown(oracle_model.request(1), hidden=CALCULATOR_TOOLS)
    assert_shown(oracle_model.request(2), tools=CALCULATOR_TOOLS)


def test_convert_units_description_lists_every_unit() -> None:
    description = oracle_plugin_calculator.convert_units.description

    def listed(symbol: str) -> bool:
        return re.search(rf"(?<![\w/]){re.escape(symbol)}(?![\w/])", description) is not None

    missing = [unit.symbol for unit in UNITS if not listed(unit.symbol)]
    assert missing == []


def test_installed_distribution_registers_the_entry_point() -> None:
    [entry] = entry_points(group="oracle.plugins", name="calculator")

    assert entry.dist is not None and entry.dist.name == "oracle-plugin-calculator"
    assert entry.load().oracle_manifest().name == "calculator"
