"""The calculator plugin as the core sees it: assembly, manifest and entry point."""

from __future__ import annotations

import re
from importlib.metadata import entry_points
from pathlib import Path

import oracle_plugin_calculator
from oracle_plugin_calculator.units import UNITS

from oracle_core import Oracle, Settings


def test_plugin_assembles_without_failures_or_warnings(tmp_path: Path) -> None:
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path)})
    oracle = Oracle([oracle_plugin_calculator], entry_points=False, settings=settings)

    assert oracle.registry.failures == []
    assert oracle.registry.warnings == []
    plugin = oracle.registry.plugins["calculator"]
    assert plugin.visibility == "on-demand"
    assert [t.name for t in plugin.tools] == ["calculate", "convert_units"]


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
