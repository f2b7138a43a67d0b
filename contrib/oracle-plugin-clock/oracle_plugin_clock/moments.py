"""Reading the clock, parsing the times people write, and describing a moment in a zone."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from oracle_plugin_clock.errors import ClockConfigError, ClockError
from oracle_plugin_clock.zones import Zone

_CLOCK_TIME = re.compile(
    r"^(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?$", re.IGNORECASE
)
_FORMATS = "'2026-11-30 14:00', '2026-11-30T14:00:00', '14:00' or '2:30 pm' (today)"


def now(config: Mapping[str, Any]) -> dt.datetime:
    """The current instant, or the fixed instant set as ``now`` in the plugin's settings.

    Raises:
        ClockConfigError: when ``now`` is set but is not an ISO 8601 time with an offset.
    """
    value = config.get("now")
    if value is None or (isinstance(value, str) and not value.strip()):
        return dt.datetime.now(dt.UTC)
    if isinstance(value, dt.datetime):  # TOML datetimes arrive already parsed
        moment = value
    else:
        try:
            moment = dt.datetime.fromisoformat(str(value).strip())
        except ValueError:
            moment = None
    if moment is None or moment.tzinfo is None:
        raise ClockConfigError(
            "[plugins.clock] now (or ORACLE_PLUGIN_CLOCK__NOW) must be an ISO 8601 time with a "
            f"UTC offset, like 2026-03-01T12:00:00+00:00, not {value!r}; remove it to use the "
            "system clock"
        )
    return moment


def parse_local(text: str, zone: Zone, current: dt.datetime) -> tuple[dt.datetime, str | None]:
    """The moment a wall-clock ``text`` means in ``zone``, and a note if it is ambiguous.

    ``text`` is a date and time (``2026-11-30 14:00``) or a time alone, which means that time
    today in ``zone`` (``today`` taken from ``current``).

    Raises:
        ClockError: when the text is not a time, carries its own UTC offset, or names a
            wall-clock time that the zone skips (a daylight-saving gap).
    """
    naive = _parse_wall_clock(text, current.astimezone(zone.tzinfo).date())
    moment = naive.replace(tzinfo=zone.tzinfo)
    if _wall_clock(moment) != naive:
        raise ClockError(
            f"{naive:%Y-%m-%d %H:%M} does not exist in {zone.name}: the clocks skip it for "
            "daylight saving time; pick a time outside the gap"
        )
    later = moment.replace(fold=1)
    if later.utcoffset() != moment.utcoffset():
        note = (
            f"{naive:%Y-%m-%d %H:%M} happens twice in {zone.name} (the clocks go back); "
            f"this is the first time, at UTC{_offset(moment)}; the second is at UTC{_offset(later)}"
        )
        return moment, note
    return moment, None


def describe(moment: dt.datetime, zone: Zone) -> dict[str, Any]:
    """A moment as the tools report it: the local time in ``zone`` and what it is called."""
    local = moment.astimezone(zone.tzinfo)
    dst = local.dst()
    return {
        "timezone": zone.name,
        "time": local.isoformat(timespec="seconds"),
        "weekday": f"{local:%A}",
        "utc_offset": _offset(local),
        "abbreviation": local.tzname(),
        "dst": bool(dst),
    }


def _parse_wall_clock(text: str, today: dt.date) -> dt.datetime:
    cleaned = " ".join(text.split())
    if not cleaned:
        raise ClockError(f"The time is empty; write it like {_FORMATS}")
    clock = _CLOCK_TIME.match(cleaned)
    if clock:
        return dt.datetime.combine(today, _clock_time(cleaned, *clock.groups()))
    try:
        parsed = dt.datetime.fromisoformat(cleaned)
    except ValueError:
        raise ClockError(f"Could not read {text!r} as a time; write it like {_FORMATS}") from None
    if parsed.tzinfo is not None:
        raise ClockError(
            f"{text!r} carries its own UTC offset; write the wall-clock time alone "
            "(like '2026-11-30 14:00') and name its zone in from_timezone"
        )
    return parsed


def _clock_time(
    text: str, hours: str, minutes: str | None, seconds: str | None, meridiem: str | None
) -> dt.time:
    hour = int(hours)
    if meridiem:
        if not 1 <= hour <= 12:
            raise ClockError(f"{text!r} is not a time: with am/pm the hour runs from 1 to 12")
        hour = hour % 12 + (12 if meridiem.lower().startswith("p") else 0)
    elif minutes is None:
        raise ClockError(f"Could not read {text!r} as a time; write it like {_FORMATS}")
    try:
        return dt.time(hour, int(minutes or 0), int(seconds or 0))
    except ValueError:
        raise ClockError(f"{text!r} is not a time of day; write it like {_FORMATS}") from None


def _wall_clock(moment: dt.datetime) -> dt.datetime:
    """The wall-clock reading that ``moment`` really shows, after a round trip through UTC."""
    tz = moment.tzinfo
    return moment.astimezone(dt.UTC).astimezone(tz).replace(tzinfo=None)


def _offset(moment: dt.datetime) -> str:
    offset = moment.utcoffset() or dt.timedelta(0)
    sign = "-" if offset < dt.timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
