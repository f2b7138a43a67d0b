"""Finding time zones by IANA name, city or UTC offset, and suggesting names for typos."""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, available_timezones

from oracle_plugin_clock.errors import ClockError

_OFFSET = re.compile(r"^(?:utc|gmt)?\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)
_UTC_NAMES = frozenset({"utc", "z", "zulu", "gmt", "universal"})
_MAX_SUGGESTIONS = 5


@dataclass(frozen=True)
class Zone:
    """A resolved time zone: the name results show and the tzinfo that does the work."""

    name: str
    tzinfo: dt.tzinfo


def find_zone(text: str) -> Zone:
    """Resolve ``text`` to a time zone.

    Accepted, case-insensitively: an IANA name (``Europe/Paris``, ``america/new york``), a
    city that names exactly one IANA zone (``Tokyo``), ``UTC``, or a fixed offset
    (``UTC+5:30``, ``-03:00``).

    Raises:
        ClockError: listing the closest IANA names and the accepted forms.
    """
    query = " ".join(text.split())
    if not query:
        raise ClockError(f"The time zone is empty. {_FORMS}")
    key = query.replace(" ", "_").casefold()
    if key in _UTC_NAMES:
        return Zone("UTC", dt.UTC)
    offset = _OFFSET.match(query)
    if offset:
        return _fixed_offset(query, *offset.groups())
    names, cities = _index()
    if key in names:
        return _zone(names[key])
    matches = cities.get(key, [])
    if len(matches) == 1:
        return _zone(matches[0])
    suggestions = matches or _close_names(key)
    hint = f" (did you mean {', '.join(suggestions)}?)" if suggestions else ""
    raise ClockError(f"Unknown time zone {text.strip()!r}{hint}. {_FORMS}")


_FORMS = (
    "Use an IANA name like 'Europe/Paris' or 'America/New_York', a city like 'Tokyo', "
    "or an offset like 'UTC+5:30'."
)


def _zone(name: str) -> Zone:
    return Zone(name, ZoneInfo(name))


def _fixed_offset(query: str, sign: str, hours: str, minutes: str | None) -> Zone:
    delta = dt.timedelta(hours=int(hours), minutes=int(minutes or 0))
    if delta > dt.timedelta(hours=14) or int(minutes or 0) >= 60:
        raise ClockError(
            f"{query!r} is not a UTC offset: offsets run from UTC-12:00 to UTC+14:00. {_FORMS}"
        )
    signed = -delta if sign == "-" else delta
    total = int(delta.total_seconds()) // 60
    name = f"UTC{sign}{total // 60:02d}:{total % 60:02d}" if total else "UTC"
    return Zone(name, dt.timezone(signed) if total else dt.UTC)


@functools.cache
def _index() -> tuple[dict[str, str], dict[str, list[str]]]:
    """Every IANA name by its folded form, and the names ending in each city."""
    names: dict[str, str] = {}
    cities: dict[str, list[str]] = {}
    for name in sorted(available_timezones()):
        names[name.casefold()] = name
        if "/" in name and not name.startswith("Etc/"):
            cities.setdefault(name.rsplit("/", 1)[1].casefold(), []).append(name)
    return names, cities


def _close_names(key: str) -> list[str]:
    names, cities = _index()
    found = [names[m] for m in difflib.get_close_matches(key, list(names), n=_MAX_SUGGESTIONS)]
    for city in difflib.get_close_matches(key, list(cities), n=_MAX_SUGGESTIONS):
        found.extend(cities[city])
    return list(dict.fromkeys(found))[:_MAX_SUGGESTIONS]
