"""The weather plugin as the core sees it: assembly, manifest, settings, entry point."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import oracle_plugin_weather

from oracle_core import Oracle, Settings, ToolContext


def build(tmp_path: Path, **env: str) -> Oracle:
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path), **env})
    return Oracle([oracle_plugin_weather], entry_points=False, settings=settings)


def test_plugin_assembles_without_failures_or_warnings(tmp_path: Path) -> None:
    oracle = build(tmp_path)

    assert oracle.registry.failures == []
    assert oracle.registry.warnings == []
    plugin = oracle.registry.plugins["weather"]
    assert plugin.visibility == "on-demand"
    assert plugin.manifest.category == "information"
    assert [t.name for t in plugin.tools] == ["get_current_weather", "get_forecast"]


def test_tool_schemas_show_the_model_only_its_arguments() -> None:
    schema = oracle_plugin_weather.get_forecast.parameters

    assert set(schema["properties"]) == {"place", "days", "units"}
    assert schema["properties"]["units"]["enum"] == ["metric", "imperial"]
    assert (schema["properties"]["days"]["minimum"], schema["properties"]["days"]["maximum"]) == (
        1,
        16,
    )


async def test_settings_from_the_environment_reach_the_tools(
    tmp_path: Path, open_meteo: str
) -> None:
    oracle = build(
        tmp_path,
        ORACLE_PLUGIN_WEATHER__GEOCODING_URL=f"{open_meteo}/v1/search",
        ORACLE_PLUGIN_WEATHER__FORECAST_URL=f"{open_meteo}/v1/forecast",
        ORACLE_PLUGIN_WEATHER__TIMEOUT="5",
    )
    plugin = oracle.registry.plugins["weather"]
    current = next(t for t in plugin.tools if t.name == "get_current_weather")

    result = await current.call(
        {"place": "Berlin"}, ToolContext(plugin="weather", config=plugin.config)
    )

    assert result["place"]["country"] == "Germany"


def test_bad_setting_leaves_the_plugin_out_naming_the_key(tmp_path: Path) -> None:
    oracle = build(tmp_path, ORACLE_PLUGIN_WEATHER__TIMEOUT="-3")

    assert "weather" not in oracle.registry.plugins
    [failure] = oracle.registry.failures
    assert failure.plugin == "weather"
    assert "ORACLE_PLUGIN_WEATHER__TIMEOUT" in str(failure)
    assert "positive number of seconds" in str(failure)


def test_installed_distribution_registers_the_entry_point() -> None:
    [entry] = entry_points(group="oracle.plugins", name="weather")

    assert entry.dist is not None and entry.dist.name == "oracle-plugin-weather"
    assert entry.load().oracle_manifest().name == "weather"
