"""The plugin's settings: ``[plugins.weather]`` in ``oracle.toml``, or the environment.

:class:`WeatherConfig` is the plugin's config model (``PluginManifest(config=WeatherConfig)``):
oracle-core validates ``[plugins.weather]`` and ``ORACLE_PLUGIN_WEATHER__<KEY>`` against it
when the oracle is assembled, so an unknown key or an unusable value leaves the plugin out
with a message naming the key, and every tool gets the typed instance as ``ctx.config``.
"""

from __future__ import annotations

import contextlib
import math
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic_core import PydanticUseDefault

DEFAULT_GEOCODING_URL = "https://geocoding-api.open-meteo.com/v1/search"
DEFAULT_FORECAST_URL = "https://api.open-meteo.com/v1/forecast"
DEFAULT_TIMEOUT = 10.0


def _unset_is_default(value: Any) -> Any:
    """An empty value (``timeout = ""``, an empty variable) means: use the default."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise PydanticUseDefault()
    return value


def _url(value: Any) -> str:
    value = _unset_is_default(value)
    if not isinstance(value, str) or not value.strip().startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL; remove it to use the default")
    return value.strip()


def _seconds(value: Any) -> float:
    value = _unset_is_default(value)
    seconds = math.nan
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        with contextlib.suppress(ValueError):
            seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError("must be a positive number of seconds (like 10 or 2.5)")
    return seconds


Url = Annotated[str, BeforeValidator(_url)]
Seconds = Annotated[float, BeforeValidator(_seconds)]


class WeatherConfig(BaseModel):
    """The settings of the weather plugin; missing or empty keys take their defaults.

    Attributes:
        geocoding_url: the Open-Meteo geocoding search endpoint.
        forecast_url: the Open-Meteo forecast endpoint.
        timeout: seconds to wait for each answer before giving up.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    geocoding_url: Url = DEFAULT_GEOCODING_URL
    forecast_url: Url = DEFAULT_FORECAST_URL
    timeout: Seconds = DEFAULT_TIMEOUT
