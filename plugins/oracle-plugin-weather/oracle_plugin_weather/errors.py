"""The errors the weather tools raise: their messages are written for the model to act on."""

from __future__ import annotations


class WeatherError(Exception):
    """A weather lookup failed: unknown place, timeout, unreachable or failing service.

    The message says what went wrong and what to try next, because the model reads it.
    """


class WeatherConfigError(WeatherError, ValueError):
    """A ``[plugins.weather]`` setting cannot be used; the message names the key and the fix."""
