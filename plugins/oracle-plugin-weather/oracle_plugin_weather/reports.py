"""Turning Open-Meteo answers into the compact results the tools return to the model."""

from __future__ import annotations

from typing import Any

from oracle_plugin_weather.errors import WeatherError
from oracle_plugin_weather.open_meteo import Place, Units
from oracle_plugin_weather.wmo import describe

# (result key, Open-Meteo variable) for each value a report carries.
_CURRENT_FIELDS = (
    ("temperature", "temperature_2m"),
    ("feels_like", "apparent_temperature"),
    ("humidity", "relative_humidity_2m"),
    ("precipitation", "precipitation"),
    ("wind_speed", "wind_speed_10m"),
    ("wind_direction", "wind_direction_10m"),
)
_DAILY_FIELDS = (
    ("temperature_max", "temperature_2m_max"),
    ("temperature_min", "temperature_2m_min"),
    ("precipitation", "precipitation_sum"),
    ("precipitation_probability", "precipitation_probability_max"),
    ("wind_speed_max", "wind_speed_10m_max"),
)
# What each unit system sends, for answers that leave out their units block.
_DEFAULT_UNITS: dict[Units, dict[str, str]] = {
    "metric": {"temperature": "°C", "precipitation": "mm", "wind_speed": "km/h"},
    "imperial": {"temperature": "°F", "precipitation": "inch", "wind_speed": "mph"},
}
_UNIT_KINDS = {
    "temperature": "temperature",
    "feels_like": "temperature",
    "temperature_max": "temperature",
    "temperature_min": "temperature",
    "precipitation": "precipitation",
    "wind_speed": "wind_speed",
    "wind_speed_max": "wind_speed",
}
_FIXED_UNITS = {
    "humidity": "%",
    "precipitation_probability": "%",
    "wind_direction": "°",
}


def current_report(place: Place, units: Units, answer: dict[str, Any]) -> dict[str, Any]:
    """The result of ``get_current_weather``: the place, local time, values and their units."""
    current = answer.get("current")
    if not isinstance(current, dict):
        raise WeatherError(
            "The weather forecast service answered without current conditions; try again later"
        )
    sent_units = answer.get("current_units")
    report: dict[str, Any] = {
        "place": place.as_dict(),
        "time": current.get("time"),
        "weather": describe(current.get("weather_code")),
    }
    for key, variable in _CURRENT_FIELDS:
        report[key] = current.get(variable)
    report["units"] = _units(_CURRENT_FIELDS, sent_units, units)
    return report


def forecast_report(place: Place, units: Units, answer: dict[str, Any]) -> dict[str, Any]:
    """The result of ``get_forecast``: the place, one entry per day, and the units."""
    daily = answer.get("daily")
    dates = daily.get("time") if isinstance(daily, dict) else None
    if not isinstance(daily, dict) or not isinstance(dates, list):
        raise WeatherError(
            "The weather forecast service answered without a daily forecast; try again later"
        )

    def column(variable: str, index: int) -> Any:
        values = daily.get(variable)
        return values[index] if isinstance(values, list) and index < len(values) else None

    days = []
    for index, date in enumerate(dates):
        day: dict[str, Any] = {
            "date": date,
            "weather": describe(column("weather_code", index)),
        }
        for key, variable in _DAILY_FIELDS:
            day[key] = column(variable, index)
        days.append(day)
    return {
        "place": place.as_dict(),
        "days": days,
        "units": _units(_DAILY_FIELDS, answer.get("daily_units"), units),
    }


def _units(fields: tuple[tuple[str, str], ...], sent: object, units: Units) -> dict[str, str]:
    """The unit of each reported value: as the service sent it, else the system's default."""
    sent_units = sent if isinstance(sent, dict) else {}
    defaults = _DEFAULT_UNITS[units]
    result: dict[str, str] = {}
    for key, variable in fields:
        kind = _UNIT_KINDS.get(key)
        fallback = defaults[kind] if kind else _FIXED_UNITS[key]
        unit = sent_units.get(variable)
        # Open-Meteo spells miles per hour "mp/h"; "mph" is what people read.
        result[key] = "mph" if unit == "mp/h" else unit if isinstance(unit, str) else fallback
    return result
