"""The errors the clock tools raise: their messages are written for the model to act on."""

from __future__ import annotations

from oracle_core import ToolError


class ClockError(ToolError, ValueError):
    """A time zone or time the clock tools cannot use; the message says what would work."""


class ClockConfigError(ClockError):
    """A ``[plugins.clock]`` setting cannot be used; the message names the key and the fix."""
