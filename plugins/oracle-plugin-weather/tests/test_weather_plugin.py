"""The weather plugin as the core and the model see it: conformance, the gate, settings."""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from typing import Any

import oracle_plugin_weather
from oracle_plugin_weather import WeatherConfig

from oracle_core import PluginConfigError
from oracle_core.testing import (
    OracleFactory,
    ScriptedModel,
    assert_shown,
    assert_tool_called,
    call_tool,
    check_plugin,
    run_turn,
)

WEATHER_TOOLS = ["get_current_weather", "get_forecast"]


def test_conforms(weather_config: dict[str, Any]) -> None:
    check_plugin(oracle_plugin_weather, config=weather_config)


def test_the_plugin_is_on_demand_information_with_two_tools(oracle_factory: OracleFactory) -> None:
    plugin = oracle_factory(oracle_plugin_weather).registry.plugins["weather"]

    assert plugin.visibility == "on-demand"
    assert plugin.manifest.category == "information"
    assert [t.name for t in plugin.tools] == WEATHER_TOOLS


def test_tool_schemas_show_the_model_only_its_arguments() -> None:
    schema = oracle_plugin_weather.get_forecast.parameters

    assert set(schema["properties"]) == {"place", "days", "units"}
    assert schema["properties"]["units"]["enum"] == ["metric", "imperial"]
    assert (schema["properties"]["days"]["minimum"], schema["properties"]["days"]["maximum"]) == (
        1,
        16,
    )


async def test_the_model_loads_weather_then_reads_the_current_weather(
    oracle_factory: OracleFactory, oracle_model: ScriptedModel, weather_config: dict[str, Any]
) -> None:
    oracle = oracle_factory(oracle_plugin_weather, config={"weather": weather_config})
    oracle_model.reply_tool_call("load_capability", {"names": ["weather"]})
    oracle_model.reply_tool_call("get_current_weather", {"place": "Berlin"})
    oracle_model.reply_text("Overcast and 3.4 °C in Berlin.")

    result = await run_turn(oracle, "What's the weather in Berlin right now?")

    assert result.answer == "Overcast and 3.4 °C in Berlin."
    assert result.loaded == ["weather"]
    report = assert_tool_called(result, "get_current_weather", {"place": "Berlin"})
    assert json.loads(report.content)["weather"] == "Overcast"
    assert_shown(oracle_model.request(1), hidden=WEATHER_TOOLS)
    assert_shown(oracle_model.request(2), tools=WEATHER_TOOLS)


async def test_settings_from_the_environment_reach_the_tools(
    oracle_factory: OracleFactory, open_meteo: str
) -> None:
    oracle = oracle_factory(
        oracle_plugin_weather,
        env={
            "ORACLE_PLUGIN_WEATHER__GEOCODING_URL": f"{open_meteo}/v1/search",
            "ORACLE_PLUGIN_WEATHER__FORECAST_URL": f"{open_meteo}/v1/forecast",
            "ORACLE_PLUGIN_WEATHER__TIMEOUT": "5",
        },
    )

    result = await call_tool(oracle, "get_current_weather", {"place": "Berlin"})

    assert result["place"]["country"] == "Germany"


def test_bad_setting_leaves_the_plugin_out_naming_the_key(oracle_factory: OracleFactory) -> None:
    oracle = oracle_factory(
        oracle_plugin_weather, env={"ORACLE_PLUGIN_WEATHER__TIMEOUT": "-3"}, strict=False
    )

    assert "weather" not in oracle.registry.plugins
    [failure] = oracle.registry.failures
    assert failure.plugin == "weather"
    assert "ORACLE_PLUGIN_WEATHER__TIMEOUT" in str(failure)
    assert "positive number of seconds" in str(failure)


def test_installed_distribution_registers_the_entry_point() -> None:
    [entry] = entry_points(group="oracle.plugins", name="weather")

    assert entry.dist is not None and entry.dist.name == "oracle-plugin-weather"
    assert entry.load().oracle_manifest().name == "weather"


def test_tools_get_the_settings_typed(oracle_factory: OracleFactory, open_meteo: str) -> None:
    oracle = oracle_factory(oracle_plugin_weather, env={"ORACLE_PLUGIN_WEATHER__TIMEOUT": "2.5"})

    config = oracle.registry.plugins["weather"].config
    assert isinstance(config, WeatherConfig)
    assert config.timeout == 2.5
    assert config.forecast_url == "https://api.open-meteo.com/v1/forecast"


def test_unknown_key_leaves_the_plugin_out_naming_it_and_the_closest_setting(
    oracle_factory: OracleFactory,
) -> None:
    oracle = oracle_factory(oracle_plugin_weather, config={"weather": {"timout": 5}}, strict=False)

    assert "weather" not in oracle.registry.plugins
    [failure] = oracle.registry.failures
    assert isinstance(failure, PluginConfigError)
    assert failure.key == "timout"
    assert "[plugins.weather] timout is not a setting of plugin 'weather'" in str(failure)
    assert "did you mean 'timeout'?" in str(failure)


def test_a_value_of_the_wrong_kind_in_oracle_toml_is_named_with_its_key(
    oracle_factory: OracleFactory,
) -> None:
    oracle = oracle_factory(
        oracle_plugin_weather,
        config={"weather": {"timeout": "soon", "forecast_url": "ftp://example.org"}},
        strict=False,
    )

    [failure] = oracle.registry.failures
    assert failure.problems == [
        "[plugins.weather] forecast_url = 'ftp://example.org': must be an http:// or https:// "
        "URL; remove it to use the default",
        "[plugins.weather] timeout = 'soon': must be a positive number of seconds (like 10 or 2.5)",
    ]
