"""oracle-plugin-clock: the current time anywhere, time-zone conversion and time differences.

Zones come from the system's IANA database through :mod:`zoneinfo`. The only setting,
``now`` under ``[plugins.clock]``, pins the clock to a fixed instant for tests and demos.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from oracle_core import Example, PluginManifest, Tool, ToolContext, hookimpl, tool
from oracle_plugin_clock.errors import ClockConfigError, ClockError
from oracle_plugin_clock.moments import describe, now, parse_local
from oracle_plugin_clock.zones import Zone, find_zone

__all__ = [
    "ClockConfigError",
    "ClockError",
    "convert_time",
    "current_time",
    "oracle_manifest",
    "oracle_tools",
    "time_difference",
]


@tool
def current_time(timezone: str = "UTC", *, ctx: ToolContext) -> dict[str, Any]:
    """Get the current date and time in a time zone.

    Returns the local time (ISO 8601 with its UTC offset), the weekday, the offset, the zone's
    abbreviation and whether daylight saving time is in effect.

    Args:
        timezone: an IANA zone like "Europe/Paris" or "America/New_York", a city like
            "Tokyo", "UTC", or an offset like "UTC+5:30".
    """
    return describe(now(ctx.config), find_zone(timezone))


@tool
def convert_time(
    time: str, from_timezone: str, to_timezone: str, *, ctx: ToolContext
) -> dict[str, Any]:
    """Convert a wall-clock time in one time zone to the same moment in another.

    Returns the moment in both zones; the date may change. Daylight saving time is taken
    into account for the date given.

    Args:
        time: the local time in from_timezone: "2026-11-30 14:00", or a time alone such as
            "14:00" or "2:30 pm" for today.
        from_timezone: the zone the time is in (IANA name, city, "UTC" or "UTC+5:30").
        to_timezone: the zone to convert it to (IANA name, city, "UTC" or "UTC+5:30").
    """
    source, target = find_zone(from_timezone), find_zone(to_timezone)
    moment, note = parse_local(time, source, now(ctx.config))
    result: dict[str, Any] = {"from": describe(moment, source), "to": describe(moment, target)}
    if note:
        result["note"] = note
    return result


@tool
def time_difference(timezone_a: str, timezone_b: str, *, ctx: ToolContext) -> dict[str, Any]:
    """Get how many hours one time zone is ahead of another right now.

    The difference can change when either zone starts or ends daylight saving time; the
    result holds for the current date.

    Args:
        timezone_a: the zone to compare against (IANA name, city, "UTC" or "UTC+5:30").
        timezone_b: the zone whose lead over timezone_a is reported.
    """
    zone_a, zone_b = find_zone(timezone_a), find_zone(timezone_b)
    moment = now(ctx.config)
    a, b = describe(moment, zone_a), describe(moment, zone_b)
    minutes = _offset_minutes(moment, zone_b) - _offset_minutes(moment, zone_a)
    return {
        "timezone_a": a,
        "timezone_b": b,
        "difference_hours": minutes / 60,
        "summary": _summary(zone_a.name, zone_b.name, minutes),
    }


def _offset_minutes(moment: datetime, zone: Zone) -> int:
    offset = moment.astimezone(zone.tzinfo).utcoffset() or timedelta(0)
    return int(offset.total_seconds()) // 60


def _summary(name_a: str, name_b: str, minutes: int) -> str:
    if minutes == 0:
        return f"{name_b} has the same time as {name_a}"
    hours, rest = divmod(abs(minutes), 60)
    parts = [f"{hours} hour{'s' * (hours != 1)}"] if hours else []
    parts += [f"{rest} minute{'s' * (rest != 1)}"] if rest else []
    direction = "ahead of" if minutes > 0 else "behind"
    return f"{name_b} is {' '.join(parts)} {direction} {name_a}"


@hookimpl
def oracle_manifest() -> PluginManifest:
    """Describe the clock plugin to the core and the model."""
    return PluginManifest(
        name="clock",
        title="Clock",
        summary="The current time in any time zone, converting times between zones, and time differences.",
        visibility="on-demand",
        when_to_use=[
            "the user asks what time or day it is, here or anywhere in the world",
            "scheduling across time zones: what a meeting time is elsewhere, how far ahead a city is",
        ],
        when_not_to_use=[
            "timers, alarms or reminders: this plugin only reads the clock",
        ],
        examples=[
            Example(
                user="What time is it in Tokyo?",
                tool="current_time",
                args={"timezone": "Asia/Tokyo"},
            ),
            Example(
                user="The call is at 2pm London time on Nov 30 - when is that in New York?",
                tool="convert_time",
                args={
                    "time": "2026-11-30 14:00",
                    "from_timezone": "Europe/London",
                    "to_timezone": "America/New_York",
                },
            ),
        ],
        tags=["time", "timezone", "clock", "date", "scheduling"],
        category="utilities",
    )


@hookimpl
def oracle_tools(config: Mapping[str, Any]) -> list[Tool]:
    """Return the clock's tools, checking its ``now`` setting first.

    A bad ``now`` makes the plugin fail when the oracle starts, naming the key, rather than
    on the model's first question about the time.
    """
    now(config)
    return [current_time, convert_time, time_difference]
