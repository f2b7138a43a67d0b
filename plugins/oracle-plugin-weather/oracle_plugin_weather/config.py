"""The plugin's settings: ``[plugins.weather]`` in ``oracle.toml``, or the environment.

Values set through ``ORACLE_PLUGIN_WEATHER__<KEY>`` arrive as strings, so every value is
parsed here rather than trusted to have the right type.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oracle_plugin_weather.errors import WeatherConfigError

DEFAULT_GEOCODING_URL = "https://geocoding-api.open-meteo.com/v1/search"
DEFAULT_FORECAST_URL = "https://api.open-meteo.com/v1/forecast"
DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True)
class WeatherConfig:
    """The parsed settings of the weather plugin.

    Attributes:
        geocoding_url: the Open-Meteo geocoding search endpoint (key ``geocoding_url``).
        forecast_url: the Open-Meteo forecast endpoint (key ``forecast_url``).
        timeout: seconds to wait for each answer before giving up (key ``timeout``).
    """

    geocoding_url: str = DEFAULT_GEOCODING_URL
    forecast_url: str = DEFAULT_FORECAST_URL
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> WeatherConfig:
        """Parse the plugin's configuration; missing or empty keys take their defaults.

        Raises:
            WeatherConfigError: naming the key, the bad value and how to set it.
        """
        return cls(
            geocoding_url=_url(config, "geocoding_url", DEFAULT_GEOCODING_URL),
            forecast_url=_url(config, "forecast_url", DEFAULT_FORECAST_URL),
            timeout=_timeout(config),
        )


def _setting(key: str) -> str:
    return f"[plugins.weather] {key} (or ORACLE_PLUGIN_WEATHER__{key.upper()})"


def _is_unset(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _url(config: Mapping[str, Any], key: str, default: str) -> str:
    value = config.get(key)
    if _is_unset(value):
        return default
    if not isinstance(value, str) or not value.strip().startswith(("http://", "https://")):
        raise WeatherConfigError(
            f"{_setting(key)} must be an http:// or https:// URL, not {value!r}; "
            f"remove it to use {default}"
        )
    return value.strip()


def _timeout(config: Mapping[str, Any]) -> float:
    value = config.get("timeout")
    if _is_unset(value):
        return DEFAULT_TIMEOUT
    seconds = math.nan
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        with contextlib.suppress(ValueError):
            seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise WeatherConfigError(
            f"{_setting('timeout')} must be a positive number of seconds (like 10 or 2.5), "
            f"not {value!r}"
        )
    return seconds
