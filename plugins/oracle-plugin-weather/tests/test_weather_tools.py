"""The weather tools, called as a run calls them, against a recorded Open-Meteo on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import oracle_plugin_weather
import pytest
from oracle_plugin_weather import WeatherConfig, WeatherError, get_current_weather

from oracle_core import Oracle, ToolArgumentsError, ToolContext
from oracle_core.testing import OracleFactory, call_tool

BERLIN = {
    "name": "Berlin",
    "region": "Land Berlin",
    "country": "Germany",
    "latitude": 52.52437,
    "longitude": 13.41053,
    "timezone": "Europe/Berlin",
}


async def test_current_weather_reports_place_conditions_and_units(weather: Oracle) -> None:
    result = await call_tool(weather, "get_current_weather", {"place": "Berlin"})

    assert result == {
        "place": BERLIN,
        "time": "2026-01-15T14:00",
        "weather": "Overcast",
        "temperature": 3.4,
        "feels_like": -0.8,
        "humidity": 81,
        "precipitation": 0.0,
        "wind_speed": 14.8,
        "wind_direction": 251,
        "units": {
            "temperature": "°C",
            "feels_like": "°C",
            "humidity": "%",
            "precipitation": "mm",
            "wind_speed": "km/h",
            "wind_direction": "°",
        },
    }


async def test_imperial_units_report_fahrenheit_mph_and_inches(weather: Oracle) -> None:
    result = await call_tool(
        weather, "get_current_weather", {"place": "Berlin", "units": "imperial"}
    )

    assert result["temperature"] == 38.1
    assert result["wind_speed"] == 9.2
    assert result["units"]["temperature"] == "°F"
    assert result["units"]["wind_speed"] == "mph"
    assert result["units"]["precipitation"] == "inch"


async def test_forecast_has_one_entry_per_requested_day(weather: Oracle) -> None:
    result = await call_tool(weather, "get_forecast", {"place": "Berlin", "days": 5})

    assert result["place"] == BERLIN
    assert [day["date"] for day in result["days"]] == [
        "2026-01-15",
        "2026-01-16",
        "2026-01-17",
        "2026-01-18",
        "2026-01-19",
    ]
    assert result["days"][1] == {
        "date": "2026-01-16",
        "weather": "Slight rain",
        "temperature_max": 6.3,
        "temperature_min": 2.1,
        "precipitation": 3.2,
        "precipitation_probability": 78,
        "wind_speed_max": 24.1,
    }
    assert result["units"] == {
        "temperature_max": "°C",
        "temperature_min": "°C",
        "precipitation": "mm",
        "precipitation_probability": "%",
        "wind_speed_max": "km/h",
    }


async def test_forecast_covers_three_days_by_default(weather: Oracle) -> None:
    result = await call_tool(weather, "get_forecast", {"place": "Berlin"})

    assert len(result["days"]) == 3


async def test_imperial_forecast_reports_fahrenheit(weather: Oracle) -> None:
    result = await call_tool(
        weather, "get_forecast", {"place": "Berlin", "days": 1, "units": "imperial"}
    )

    assert result["days"][0]["temperature_max"] == 41.2
    assert result["units"]["temperature_max"] == "°F"
    assert result["units"]["wind_speed_max"] == "mph"


async def test_forecast_days_outside_1_to_16_are_rejected(weather: Oracle) -> None:
    with pytest.raises(ToolArgumentsError, match="days"):
        await call_tool(weather, "get_forecast", {"place": "Berlin", "days": 17})


async def test_region_after_a_comma_picks_among_places_of_the_same_name(weather: Oracle) -> None:
    result = await call_tool(weather, "get_current_weather", {"place": "Springfield, Illinois"})

    assert result["place"]["region"] == "Illinois"
    assert (result["place"]["latitude"], result["place"]["longitude"]) == (39.80172, -89.64371)


async def test_country_abbreviation_after_a_comma_is_understood(weather: Oracle) -> None:
    result = await call_tool(weather, "get_current_weather", {"place": "Springfield, USA"})

    assert result["place"]["country"] == "United States"


async def test_unknown_place_says_so_and_what_to_try(weather: Oracle) -> None:
    with pytest.raises(WeatherError) as raised:
        await call_tool(weather, "get_current_weather", {"place": "Xyzzy"})

    assert str(raised.value) == (
        "No place called 'Xyzzy' was found; check the spelling or add the country"
    )


async def test_unmatched_region_lists_the_places_that_were_found(weather: Oracle) -> None:
    with pytest.raises(WeatherError) as raised:
        await call_tool(weather, "get_forecast", {"place": "Springfield, Narnia"})

    message = str(raised.value)
    assert "No place called 'Springfield' was found in 'Narnia'" in message
    assert "Springfield, Illinois, United States" in message


async def test_slow_service_fails_with_a_timeout_error(
    oracle_factory: OracleFactory, open_meteo: str
) -> None:
    # Settings from the environment arrive as strings, "0.05" seconds included.
    oracle = oracle_factory(
        oracle_plugin_weather,
        env={
            "ORACLE_PLUGIN_WEATHER__GEOCODING_URL": f"{open_meteo}/slow/v1/search",
            "ORACLE_PLUGIN_WEATHER__FORECAST_URL": f"{open_meteo}/v1/forecast",
            "ORACLE_PLUGIN_WEATHER__TIMEOUT": "0.05",
        },
    )

    with pytest.raises(WeatherError, match=r"did not answer within 0\.05 seconds; try again"):
        await call_tool(oracle, "get_current_weather", {"place": "Berlin"})


async def test_unreachable_service_fails_with_a_clear_error(
    oracle_factory: OracleFactory, closed_port: int
) -> None:
    oracle = oracle_factory(
        oracle_plugin_weather,
        config={
            "weather": {
                "geocoding_url": f"http://127.0.0.1:{closed_port}/v1/search",
                "forecast_url": f"http://127.0.0.1:{closed_port}/v1/forecast",
            }
        },
    )

    with pytest.raises(WeatherError, match=rf"\(127\.0\.0\.1:{closed_port}\) could not be reached"):
        await call_tool(oracle, "get_forecast", {"place": "Berlin"})


async def test_rejected_request_reports_the_status_and_the_services_reason(
    oracle_factory: OracleFactory, weather_config: dict[str, Any], open_meteo: str
) -> None:
    broken = {**weather_config, "forecast_url": f"{open_meteo}/broken/v1/forecast"}
    oracle = oracle_factory(oracle_plugin_weather, config={"weather": broken})

    with pytest.raises(WeatherError) as raised:
        await call_tool(oracle, "get_current_weather", {"place": "Berlin"})

    assert "forecast service" in str(raised.value)
    assert "answered HTTP 400 (Latitude must be in range of -90 to 90°" in str(raised.value)


async def test_failing_service_reports_the_status(
    oracle_factory: OracleFactory, weather_config: dict[str, Any], open_meteo: str
) -> None:
    down = {**weather_config, "geocoding_url": f"{open_meteo}/down/v1/search"}
    oracle = oracle_factory(oracle_plugin_weather, config={"weather": down})

    with pytest.raises(
        WeatherError, match=r"geocoding service .* answered HTTP 503 instead of data"
    ):
        await call_tool(oracle, "get_current_weather", {"place": "Berlin"})


async def test_a_tool_called_outside_an_oracle_uses_the_config_in_its_context(
    weather_config: dict[str, Any],
) -> None:
    # In an oracle, ctx.config is the WeatherConfig that oracle-core validated; a test that
    # calls the tool itself hands it one.
    context = ToolContext(plugin="weather", config=WeatherConfig(**weather_config))

    result = await get_current_weather.call({"place": "Berlin"}, context)

    assert result["place"]["country"] == "Germany"
