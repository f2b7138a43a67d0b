"""oracle-plugin-weather: current weather and daily forecasts from the keyless Open-Meteo API.

Install it next to oracle-core and it is found through its ``oracle.plugins`` entry point.
Its settings live under ``[plugins.weather]`` in ``oracle.toml`` (see the README).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from oracle_core import Example, PluginManifest, Tool, ToolContext, hookimpl, tool
from oracle_plugin_weather.config import WeatherConfig
from oracle_plugin_weather.errors import WeatherError
from oracle_plugin_weather.open_meteo import MAX_FORECAST_DAYS, OpenMeteo, Units
from oracle_plugin_weather.reports import current_report, forecast_report

__all__ = [
    "WeatherConfig",
    "WeatherError",
    "get_current_weather",
    "get_forecast",
    "oracle_manifest",
    "oracle_tools",
]


@tool
async def get_current_weather(
    place: str, units: Units = "metric", *, ctx: ToolContext
) -> dict[str, Any]:
    """Get the weather right now at a place.

    Returns the conditions, temperature, feels-like temperature, humidity, precipitation and
    wind, with the place the name resolved to and the unit of each value.

    Args:
        place: a city, town or postal code; add the region or country after a comma
            when the name is ambiguous (for example "Springfield, Illinois" or "Paris, France").
        units: "metric" (°C, km/h, mm) or "imperial" (°F, mph, inch).
    """
    config: WeatherConfig = ctx.config  # validated by oracle-core at assembly
    async with OpenMeteo(config) as api:
        found = await api.find_place(place)
        return current_report(found, units, await api.current(found, units))


@tool
async def get_forecast(
    place: str,
    days: Annotated[int, Field(ge=1, le=MAX_FORECAST_DAYS)] = 3,
    units: Units = "metric",
    *,
    ctx: ToolContext,
) -> dict[str, Any]:
    """Get the daily forecast for a place, starting today.

    Returns one entry per day with the conditions, high and low temperature, precipitation
    and its probability, and maximum wind, with the place the name resolved to and the units.

    Args:
        place: a city, town or postal code; add the region or country after a comma
            when the name is ambiguous (for example "Springfield, Illinois" or "Paris, France").
        days: how many days to forecast, from 1 (today only) to 16.
        units: "metric" (°C, km/h, mm) or "imperial" (°F, mph, inch).
    """
    config: WeatherConfig = ctx.config  # validated by oracle-core at assembly
    async with OpenMeteo(config) as api:
        found = await api.find_place(place)
        return forecast_report(found, units, await api.daily(found, units, days))


@hookimpl
def oracle_manifest() -> PluginManifest:
    """Describe the weather plugin to the core and the model."""
    return PluginManifest(
        name="weather",
        title="Weather",
        summary="Current weather and daily forecasts (up to 16 days) for any place, from Open-Meteo.",
        visibility="on-demand",
        when_to_use=[
            "the user asks what the weather, temperature, wind or rain is like somewhere now",
            "the user asks for a forecast for a place today or in the next days",
            "a plan depends on the weather (what to wear, whether to go out, travel)",
        ],
        when_not_to_use=[
            "past weather or climate averages: these tools only know now and the next 16 days",
            "a forecast more than 16 days ahead",
        ],
        examples=[
            Example(
                user="What's the weather in Berlin right now?",
                tool="get_current_weather",
                args={"place": "Berlin"},
            ),
            Example(
                user="Will it rain in Springfield, Illinois this weekend? Use Fahrenheit.",
                tool="get_forecast",
                args={"place": "Springfield, Illinois", "days": 7, "units": "imperial"},
            ),
        ],
        tags=["weather", "forecast", "temperature", "rain", "wind"],
        category="information",
        config=WeatherConfig,
    )


@hookimpl
def oracle_tools() -> list[Tool]:
    """Return the weather tools.

    Their settings need no check here: ``config=WeatherConfig`` in the manifest makes
    oracle-core validate ``[plugins.weather]`` when the oracle starts, naming a bad key,
    instead of failing on the model's first weather question.
    """
    return [get_current_weather, get_forecast]
