"""The errors the weather tools raise: their messages are written for the model to act on."""

from __future__ import annotations

from oracle_core import ToolError


class WeatherError(ToolError):
    """A weather lookup failed: unknown place, timeout, unreachable or failing service.

    The message says what went wrong and what to try next, because the model reads it.
    As a :class:`~oracle_core.ToolError` it reaches the model without a logged traceback.
    """
