"""The clock tools at fixed instants, set through the plugin's ``now`` setting."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import oracle_plugin_clock
import pytest
from oracle_plugin_clock import ClockConfigError, ClockError, current_time

from oracle_core import Oracle, ToolContext
from oracle_core.testing import OracleFactory, call_tool

WINTER = "2026-03-01T12:00:00+00:00"  # a Sunday; Europe and North America on standard time
SUMMER = "2026-07-01T12:00:00+00:00"

ClockAt = Callable[[str], Oracle]


@pytest.fixture
def clock_at(oracle_factory: OracleFactory) -> ClockAt:
    """``clock_at(instant)``: an oracle whose clock reads ``instant`` (``[plugins.clock] now``)."""
    return lambda now: oracle_factory(oracle_plugin_clock, config={"clock": {"now": now}})


@pytest.fixture
def clock(clock_at: ClockAt) -> Oracle:
    """An oracle whose clock reads ``WINTER``."""
    return clock_at(WINTER)


async def test_current_time_in_a_zone(clock: Oracle) -> None:
    result = await call_tool(clock, "current_time", {"timezone": "Europe/Paris"})

    assert result == {
        "timezone": "Europe/Paris",
        "time": "2026-03-01T13:00:00+01:00",
        "weekday": "Sunday",
        "utc_offset": "+01:00",
        "abbreviation": "CET",
        "dst": False,
    }


async def test_current_time_defaults_to_utc(clock: Oracle) -> None:
    result = await call_tool(clock, "current_time")

    assert (result["timezone"], result["time"]) == ("UTC", "2026-03-01T12:00:00+00:00")


async def test_current_time_follows_daylight_saving_time(clock_at: ClockAt) -> None:
    result = await call_tool(clock_at(SUMMER), "current_time", {"timezone": "Europe/Paris"})

    assert result["time"] == "2026-07-01T14:00:00+02:00"
    assert (result["abbreviation"], result["dst"]) == ("CEST", True)


async def test_current_time_reads_the_system_clock_when_now_is_not_set(
    oracle_factory: OracleFactory,
) -> None:
    oracle = oracle_factory(oracle_plugin_clock)

    before = datetime.now(UTC).replace(microsecond=0)
    result = await call_tool(oracle, "current_time", {"timezone": "UTC"})
    after = datetime.now(UTC)

    assert before <= datetime.fromisoformat(result["time"]) <= after


@pytest.mark.parametrize(
    ("spelling", "zone"),
    [
        ("america/new york", "America/New_York"),
        ("Tokyo", "Asia/Tokyo"),
        ("utc", "UTC"),
        ("UTC+5:30", "UTC+05:30"),
        ("-03:00", "UTC-03:00"),
    ],
)
async def test_zones_are_found_by_name_city_or_offset(
    clock: Oracle, spelling: str, zone: str
) -> None:
    result = await call_tool(clock, "current_time", {"timezone": spelling})

    assert result["timezone"] == zone


async def test_fixed_offset_shows_that_offset(clock: Oracle) -> None:
    result = await call_tool(clock, "current_time", {"timezone": "UTC+5:30"})

    assert result["time"] == "2026-03-01T17:30:00+05:30"


async def test_unknown_zone_lists_close_matches(clock: Oracle) -> None:
    with pytest.raises(ClockError) as raised:
        await call_tool(clock, "current_time", {"timezone": "Europe/Pari"})

    message = str(raised.value)
    assert message.startswith("Unknown time zone 'Europe/Pari' (did you mean Europe/Paris")
    assert "Use an IANA name like 'Europe/Paris'" in message


async def test_city_in_several_zones_lists_them(clock: Oracle) -> None:
    with pytest.raises(ClockError, match="did you mean Asia/Istanbul, Europe/Istanbul"):
        await call_tool(clock, "current_time", {"timezone": "Istanbul"})


async def test_convert_time_gives_the_moment_in_both_zones(clock: Oracle) -> None:
    result = await call_tool(
        clock,
        "convert_time",
        {
            "time": "2026-11-30 14:00",
            "from_timezone": "Europe/London",
            "to_timezone": "America/New_York",
        },
    )

    assert result["from"]["time"] == "2026-11-30T14:00:00+00:00"
    assert result["to"] == {
        "timezone": "America/New_York",
        "time": "2026-11-30T09:00:00-05:00",
        "weekday": "Monday",
        "utc_offset": "-05:00",
        "abbreviation": "EST",
        "dst": False,
    }
    assert "note" not in result


async def test_convert_time_uses_daylight_saving_time_of_the_given_date(clock: Oracle) -> None:
    # On 20 March 2026 New York is already on summer time and London is not yet.
    result = await call_tool(
        clock,
        "convert_time",
        {"time": "2026-03-20T14:00", "from_timezone": "London", "to_timezone": "New York"},
    )

    assert result["to"]["time"] == "2026-03-20T10:00:00-04:00"


async def test_time_alone_means_today_in_the_source_zone(clock: Oracle) -> None:
    result = await call_tool(
        clock,
        "convert_time",
        {"time": "14:00", "from_timezone": "Asia/Tokyo", "to_timezone": "America/Los_Angeles"},
    )

    assert result["from"]["time"] == "2026-03-01T14:00:00+09:00"
    assert (result["to"]["time"], result["to"]["weekday"]) == (
        "2026-02-28T21:00:00-08:00",
        "Saturday",
    )


async def test_today_is_the_date_in_the_source_zone_not_in_utc(clock_at: ClockAt) -> None:
    late_utc = clock_at("2026-03-01T23:30:00+00:00")  # already 2 March in Tokyo

    result = await call_tool(
        late_utc,
        "convert_time",
        {"time": "9:00", "from_timezone": "Asia/Tokyo", "to_timezone": "UTC"},
    )

    assert result["from"]["time"] == "2026-03-02T09:00:00+09:00"


async def test_twelve_hour_clock_times_are_understood(clock: Oracle) -> None:
    result = await call_tool(
        clock,
        "convert_time",
        {"time": "2:30 pm", "from_timezone": "UTC", "to_timezone": "Asia/Kolkata"},
    )

    assert result["to"]["time"] == "2026-03-01T20:00:00+05:30"


async def test_time_skipped_by_daylight_saving_is_refused(clock: Oracle) -> None:
    with pytest.raises(ClockError, match="2026-03-29 02:30 does not exist in Europe/Berlin"):
        await call_tool(
            clock,
            "convert_time",
            {"time": "2026-03-29 02:30", "from_timezone": "Europe/Berlin", "to_timezone": "UTC"},
        )


async def test_time_repeated_by_daylight_saving_takes_the_first_and_says_so(clock: Oracle) -> None:
    result = await call_tool(
        clock,
        "convert_time",
        {"time": "2026-10-25 02:30", "from_timezone": "Europe/Berlin", "to_timezone": "UTC"},
    )

    assert result["to"]["time"] == "2026-10-25T00:30:00+00:00"
    assert result["note"].startswith("2026-10-25 02:30 happens twice in Europe/Berlin")


@pytest.mark.parametrize(
    ("time", "message"),
    [
        ("tomorrow", "Could not read 'tomorrow' as a time"),
        ("25:00", "'25:00' is not a time of day"),
        ("13 pm", "with am/pm the hour runs from 1 to 12"),
        ("2026-11-30T14:00+01:00", "carries its own UTC offset"),
    ],
)
async def test_unreadable_times_say_how_to_write_them(
    clock: Oracle, time: str, message: str
) -> None:
    with pytest.raises(ClockError, match=message):
        await call_tool(
            clock, "convert_time", {"time": time, "from_timezone": "UTC", "to_timezone": "UTC"}
        )


async def test_time_difference_in_hours_and_words(clock: Oracle) -> None:
    result = await call_tool(
        clock, "time_difference", {"timezone_a": "Europe/Paris", "timezone_b": "Asia/Kolkata"}
    )

    assert result["difference_hours"] == 4.5
    assert result["summary"] == "Asia/Kolkata is 4 hours 30 minutes ahead of Europe/Paris"
    assert result["timezone_a"]["time"] == "2026-03-01T13:00:00+01:00"
    assert result["timezone_b"]["time"] == "2026-03-01T17:30:00+05:30"


async def test_time_difference_says_behind_when_b_is_behind(clock: Oracle) -> None:
    result = await call_tool(
        clock, "time_difference", {"timezone_a": "Asia/Tokyo", "timezone_b": "America/New_York"}
    )

    assert result["difference_hours"] == -14.0
    assert result["summary"] == "America/New_York is 14 hours behind Asia/Tokyo"


async def test_time_difference_depends_on_the_date(clock_at: ClockAt) -> None:
    args = {"timezone_a": "Europe/London", "timezone_b": "America/New_York"}

    march_20 = await call_tool(clock_at("2026-03-20T12:00:00+00:00"), "time_difference", args)
    january = await call_tool(clock_at("2026-01-15T12:00:00+00:00"), "time_difference", args)

    assert (march_20["difference_hours"], january["difference_hours"]) == (-4.0, -5.0)


async def test_same_time_zones_have_no_difference(clock: Oracle) -> None:
    result = await call_tool(
        clock, "time_difference", {"timezone_a": "Europe/Paris", "timezone_b": "Europe/Berlin"}
    )

    assert result["summary"] == "Europe/Berlin has the same time as Europe/Paris"


async def test_the_tool_itself_rejects_an_unusable_now_naming_the_key() -> None:
    # An oracle never hands a tool this setting (the plugin fails to assemble with it, see
    # test_clock_plugin.py), so the tool's own check is called directly.
    context = ToolContext(plugin="clock", config={"now": "2026-03-01 12:00"})  # no UTC offset

    with pytest.raises(ClockConfigError, match="ORACLE_PLUGIN_CLOCK__NOW"):
        await current_time.call({}, context)
