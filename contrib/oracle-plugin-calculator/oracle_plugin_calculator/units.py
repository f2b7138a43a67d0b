"""Unit conversion for length, mass, temperature, volume and speed.

Every unit is defined by how a value in it becomes a value in its quantity's base unit
(metre, kilogram, kelvin, litre, metre per second): ``base = value * factor + offset``.
Only temperatures need the offset.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from oracle_core import ToolError

SIGNIFICANT_DIGITS = 12
"""Results are rounded to this many significant digits, hiding binary noise."""

ABSOLUTE_ZERO_KELVIN = 0.0


class ConversionError(ToolError, ValueError):
    """A conversion is impossible; the message lists the units that would work."""


@dataclass(frozen=True)
class Unit:
    """A unit of measurement.

    Attributes:
        symbol: its canonical symbol, used in results (``"km"``).
        name: its name in words (``"kilometre"``).
        quantity: what it measures: length, mass, temperature, volume or speed.
        factor: how many base units one of it is.
        offset: added after scaling (temperatures only).
        aliases: other spellings accepted for it (matched without case or ``°``).
    """

    symbol: str
    name: str
    quantity: str
    factor: float
    offset: float = 0.0
    aliases: tuple[str, ...] = ()


def _units(quantity: str, *rows: tuple[str, str, float, tuple[str, ...]]) -> list[Unit]:
    return [
        Unit(symbol, name, quantity, factor, 0.0, aliases) for symbol, name, factor, aliases in rows
    ]


UNITS: list[Unit] = [
    *_units(
        "length",
        ("m", "metre", 1.0, ("meter", "meters", "metres")),
        ("km", "kilometre", 1000.0, ("kilometer", "kilometers", "kilometres")),
        ("cm", "centimetre", 0.01, ("centimeter", "centimeters", "centimetres")),
        ("mm", "millimetre", 0.001, ("millimeter", "millimeters", "millimetres")),
        ("um", "micrometre", 1e-6, ("µm", "μm", "micrometer", "micrometers", "micron", "microns")),
        ("nm", "nanometre", 1e-9, ("nanometer", "nanometers", "nanometres")),
        ("mi", "mile", 1609.344, ("mile", "miles")),
        ("yd", "yard", 0.9144, ("yard", "yards")),
        ("ft", "foot", 0.3048, ("foot", "feet", "'")),
        ("in", "inch", 0.0254, ("inch", "inches", '"')),
        ("nmi", "nautical mile", 1852.0, ("nautical mile", "nautical miles")),
    ),
    *_units(
        "mass",
        ("kg", "kilogram", 1.0, ("kilogram", "kilograms", "kilo", "kilos", "kgs")),
        ("g", "gram", 0.001, ("gram", "grams")),
        ("mg", "milligram", 1e-6, ("milligram", "milligrams")),
        ("t", "tonne", 1000.0, ("tonne", "tonnes", "metric ton", "metric tons")),
        ("lb", "pound", 0.45359237, ("lbs", "pound", "pounds")),
        ("oz", "ounce", 0.028349523125, ("ounce", "ounces")),
        ("st", "stone", 6.35029318, ("stone", "stones")),
    ),
    Unit("°C", "degree Celsius", "temperature", 1.0, 273.15, ("celsius", "degc", "centigrade")),
    Unit(
        "°F",
        "degree Fahrenheit",
        "temperature",
        5 / 9,
        273.15 - 32 * 5 / 9,
        ("fahrenheit", "degf"),
    ),
    Unit("K", "kelvin", "temperature", 1.0, 0.0, ("kelvin", "kelvins")),
    *_units(
        "volume",
        ("l", "litre", 1.0, ("liter", "liters", "litres")),
        ("ml", "millilitre", 0.001, ("milliliter", "milliliters", "millilitres")),
        ("cl", "centilitre", 0.01, ("centiliter", "centiliters", "centilitres")),
        ("dl", "decilitre", 0.1, ("deciliter", "deciliters", "decilitres")),
        ("m3", "cubic metre", 1000.0, ("m^3", "m³", "cubic meter", "cubic meters", "cubic metres")),
        ("cm3", "cubic centimetre", 0.001, ("cc", "cm^3", "cm³", "cubic centimeter")),
        ("gal", "US gallon", 3.785411784, ("gallon", "gallons", "us gallon", "us gallons")),
        ("qt", "US quart", 0.946352946, ("quart", "quarts")),
        ("pt", "US pint", 0.473176473, ("pint", "pints")),
        ("cup", "US cup", 0.2365882365, ("cups",)),
        ("fl oz", "US fluid ounce", 0.0295735295625, ("floz", "fluid ounce", "fluid ounces")),
        ("tbsp", "tablespoon", 0.01478676478125, ("tablespoon", "tablespoons")),
        ("tsp", "teaspoon", 0.00492892159375, ("teaspoon", "teaspoons")),
        ("imp gal", "imperial gallon", 4.54609, ("imperial gallon", "imperial gallons")),
        ("imp pt", "imperial pint", 0.56826125, ("imperial pint", "imperial pints")),
        ("ft3", "cubic foot", 28.316846592, ("ft^3", "ft³", "cubic foot", "cubic feet")),
        ("in3", "cubic inch", 0.016387064, ("in^3", "in³", "cubic inch", "cubic inches")),
    ),
    *_units(
        "speed",
        ("m/s", "metre per second", 1.0, ("mps", "meters per second", "metres per second")),
        ("km/h", "kilometre per hour", 1 / 3.6, ("kmh", "kph", "km/hr", "kilometers per hour")),
        ("mph", "mile per hour", 0.44704, ("mi/h", "miles per hour")),
        ("kn", "knot", 1852 / 3600, ("kt", "kts", "knot", "knots")),
        ("ft/s", "foot per second", 0.3048, ("fps", "feet per second")),
    ),
]
"""Every unit :func:`convert` knows, grouped by quantity."""

QUANTITIES: tuple[str, ...] = tuple(dict.fromkeys(unit.quantity for unit in UNITS))
"""The quantities, in the order they are listed in messages."""


def _key(text: str) -> str:
    """How a unit is looked up: no case, no degree sign, ``_``/``-`` as spaces."""
    cleaned = text.replace("°", "").replace("º", "").replace("_", " ").replace("-", " ")
    return " ".join(cleaned.lower().split()).rstrip(".")


_LOOKUP: dict[str, Unit] = {}
for _unit in UNITS:
    for _spelling in (_unit.symbol, _unit.name, *_unit.aliases):
        _LOOKUP.setdefault(_key(_spelling), _unit)
# Case matters for these only: aviation and shipping write nautical miles as NM.
_CASE_SENSITIVE = {"NM": _LOOKUP["nmi"]}


def find_unit(text: str) -> Unit:
    """The unit ``text`` names, by symbol, name or alias.

    Raises:
        ConversionError: listing the close spellings and every known unit.
    """
    unit = _CASE_SENSITIVE.get(text.strip()) or _LOOKUP.get(_key(text))
    if unit is not None:
        return unit
    close = difflib.get_close_matches(_key(text), list(_LOOKUP), n=3, cutoff=0.7)
    symbols = dict.fromkeys(repr(_LOOKUP[c].symbol) for c in close)
    hint = f" (did you mean {', '.join(symbols)}?)" if symbols else ""
    raise ConversionError(f"Unknown unit {text!r}{hint}; known units: {known_units()}")


def known_units() -> str:
    """Every unit symbol, grouped by quantity: ``length: m, km, ...; mass: ...``."""
    return "; ".join(
        f"{quantity}: {', '.join(compatible_symbols(quantity))}" for quantity in QUANTITIES
    )


def compatible_symbols(quantity: str) -> list[str]:
    """The symbols of every unit measuring ``quantity``."""
    return [unit.symbol for unit in UNITS if unit.quantity == quantity]


def convert(value: float, source: Unit, target: Unit) -> float:
    """Convert ``value`` from ``source`` to ``target``, rounded to 12 significant digits.

    Raises:
        ConversionError: when the units measure different quantities (naming the units
            that would work) or a temperature is below absolute zero.
    """
    if source.quantity != target.quantity:
        others = [s for s in compatible_symbols(source.quantity) if s != source.symbol]
        raise ConversionError(
            f"Cannot convert {source.symbol} ({source.quantity}) to {target.symbol} "
            f"({target.quantity}); {source.symbol} converts to {', '.join(others)}"
        )
    base = value * source.factor + source.offset
    if source.quantity == "temperature" and base < ABSOLUTE_ZERO_KELVIN:
        raise ConversionError(
            f"{value:g} {source.symbol} is below absolute zero "
            f"({_from_base(ABSOLUTE_ZERO_KELVIN, source):g} {source.symbol}); check the value"
        )
    result = _from_base(base, target)
    return float(f"{result:.{SIGNIFICANT_DIGITS}g}")


def _from_base(base: float, unit: Unit) -> float:
    return (base - unit.offset) / unit.factor
