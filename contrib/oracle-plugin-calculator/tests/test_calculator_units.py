"""The convert_units tool: conversions, spellings, and the errors a model can act on."""

from __future__ import annotations

import pytest
from oracle_plugin_calculator import ConversionError, convert_units

from oracle_core import ToolArgumentsError


async def converted(value: float, from_unit: str, to_unit: str) -> object:
    answer = await convert_units.call({"value": value, "from_unit": from_unit, "to_unit": to_unit})
    return answer["result"]


@pytest.mark.parametrize(
    ("value", "from_unit", "to_unit", "expected"),
    [
        (26.2, "mi", "km", 42.1648128),
        (5, "ft", "in", 60.0),
        (1, "nmi", "m", 1852.0),
        (1, "kg", "lb", 2.20462262185),
        (16, "oz", "lb", 1.0),
        (212, "°F", "°C", 100.0),
        (37, "°C", "°F", 98.6),
        (0, "K", "°C", -273.15),
        (1, "gal", "l", 3.785411784),
        (1, "imp gal", "l", 4.54609),
        (3, "tsp", "tbsp", 1.0),
        (100, "km/h", "mph", 62.1371192237),
        (10, "kn", "km/h", 18.52),
    ],
)
async def test_conversion_gives_the_right_value(
    value: float, from_unit: str, to_unit: str, expected: float
) -> None:
    assert await converted(value, from_unit, to_unit) == expected


async def test_result_names_the_units_as_understood() -> None:
    answer = await convert_units.call({"value": 100, "from_unit": "Miles", "to_unit": "kilometres"})

    assert answer == {
        "value": 100.0,
        "from_unit": "mi",
        "to_unit": "km",
        "result": 160.9344,
        "quantity": "length",
    }


@pytest.mark.parametrize(
    ("spelling", "symbol"),
    [
        ("celsius", "°C"),
        ("degF", "°F"),
        ("C", "°C"),
        ("pounds", "lb"),
        ("NM", "nmi"),
        ("kph", "km/h"),
    ],
)
async def test_names_symbols_and_plurals_are_accepted(spelling: str, symbol: str) -> None:
    answer = await convert_units.call({"value": 1, "from_unit": spelling, "to_unit": symbol})

    assert answer["from_unit"] == answer["to_unit"] == symbol
    assert answer["result"] == 1.0


async def test_incompatible_units_list_the_compatible_ones() -> None:
    with pytest.raises(ConversionError) as raised:
        await convert_units.call({"value": 1, "from_unit": "kg", "to_unit": "m"})

    assert str(raised.value) == (
        "Cannot convert kg (mass) to m (length); kg converts to g, mg, t, lb, oz, st"
    )


async def test_unknown_unit_suggests_close_ones_and_lists_all() -> None:
    with pytest.raises(ConversionError) as raised:
        await convert_units.call({"value": 1, "from_unit": "kilogrm", "to_unit": "lb"})

    message = str(raised.value)
    assert message.startswith("Unknown unit 'kilogrm' (did you mean 'kg'?); known units: ")
    assert "temperature: °C, °F, K" in message


async def test_temperatures_below_absolute_zero_are_refused() -> None:
    with pytest.raises(ConversionError, match=r"-500 °C is below absolute zero \(-273\.15 °C\)"):
        await convert_units.call({"value": -500, "from_unit": "°C", "to_unit": "K"})


async def test_value_must_be_a_finite_number() -> None:
    with pytest.raises(ToolArgumentsError, match="value"):
        await convert_units.call({"value": float("inf"), "from_unit": "m", "to_unit": "km"})
