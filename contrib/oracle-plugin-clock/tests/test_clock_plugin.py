"""The clock plugin as the core sees it: assembly, settings and entry point."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import oracle_plugin_clock

from oracle_core import Oracle, Settings, ToolContext


def build(tmp_path: Path, **env: str) -> Oracle:
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path), **env})
    return Oracle([oracle_plugin_clock], entry_points=False, settings=settings)


def test_plugin_assembles_without_failures_or_warnings(tmp_path: Path) -> None:
    oracle = build(tmp_path)

    assert oracle.registry.failures == []
    assert oracle.registry.warnings == []
    plugin = oracle.registry.plugins["clock"]
    assert plugin.visibility == "on-demand"
    assert [t.name for t in plugin.tools] == ["current_time", "convert_time", "time_difference"]


def test_tool_schemas_show_the_model_only_its_arguments() -> None:
    schema = oracle_plugin_clock.convert_time.parameters

    assert set(schema["properties"]) == {"time", "from_timezone", "to_timezone"}
    assert schema["required"] == ["time", "from_timezone", "to_timezone"]


async def test_now_from_the_environment_reaches_the_tools(tmp_path: Path) -> None:
    oracle = build(tmp_path, ORACLE_PLUGIN_CLOCK__NOW="2026-03-01T12:00:00Z")
    plugin = oracle.registry.plugins["clock"]
    current = next(t for t in plugin.tools if t.name == "current_time")

    result = await current.call(
        {"timezone": "Asia/Tokyo"}, ToolContext(plugin="clock", config=plugin.config)
    )

    assert result["time"] == "2026-03-01T21:00:00+09:00"


def test_bad_now_setting_leaves_the_plugin_out_naming_the_key(tmp_path: Path) -> None:
    oracle = build(tmp_path, ORACLE_PLUGIN_CLOCK__NOW="noon")

    assert "clock" not in oracle.registry.plugins
    [failure] = oracle.registry.failures
    assert failure.plugin == "clock"
    assert "ORACLE_PLUGIN_CLOCK__NOW" in str(failure)


def test_installed_distribution_registers_the_entry_point() -> None:
    [entry] = entry_points(group="oracle.plugins", name="clock")

    assert entry.dist is not None and entry.dist.name == "oracle-plugin-clock"
    assert entry.load().oracle_manifest().name == "clock"
