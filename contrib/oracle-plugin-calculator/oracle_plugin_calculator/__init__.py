"""oracle-plugin-calculator: safe arithmetic and unit conversion for oracle-core agents.

Language models are unreliable at arithmetic; these tools make it exact. Expressions are
parsed with :mod:`ast` and evaluated node by node, never with ``eval``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from oracle_core import Example, PluginManifest, Tool, hookimpl, tool
from oracle_plugin_calculator.evaluator import CalculationError, evaluate
from oracle_plugin_calculator.units import ConversionError, convert, find_unit

__all__ = [
    "CalculationError",
    "ConversionError",
    "calculate",
    "convert_units",
    "oracle_manifest",
    "oracle_tools",
]


@tool
def calculate(expression: str) -> dict[str, Any]:
    """Evaluate an arithmetic expression exactly, like a calculator.

    Supports numbers (1e-3 too), + - * / // % ** and parentheses; the functions sqrt, sin,
    cos, tan (radians), log (natural; log(x, base) for another base), exp, abs,
    round(x, ndigits), min and max; and the constants pi and e. Integers are exact; decimals
    are shown to 15 significant digits.

    Args:
        expression: the expression in Python syntax, for example "2340 * 17.5 / 100" or
            "1000 * (1 + 0.05) ** 10". Write powers with **, not ^.
    """
    return {"expression": expression, "result": evaluate(expression)}


@tool
def convert_units(
    value: Annotated[float, Field(allow_inf_nan=False)], from_unit: str, to_unit: str
) -> dict[str, Any]:
    """Convert a value between units of the same quantity.

    Units: length m, km, cm, mm, um, nm, mi, yd, ft, in, nmi; mass kg, g, mg, t (tonne), lb,
    oz, st; temperature °C, °F, K; volume l, ml, cl, dl, m3, cm3, gal, qt, pt, cup, fl oz,
    tbsp, tsp (all US), imp gal, imp pt, ft3, in3; speed m/s, km/h, mph, kn, ft/s.
    Names and plurals work too ("miles", "celsius", "pounds").

    Args:
        value: the amount to convert.
        from_unit: the unit of the value, for example "mi" or "°F".
        to_unit: the unit wanted, for example "km" or "°C".
    """
    source, target = find_unit(from_unit), find_unit(to_unit)
    return {
        "value": value,
        "from_unit": source.symbol,
        "to_unit": target.symbol,
        "result": convert(value, source, target),
        "quantity": source.quantity,
    }


@hookimpl
def oracle_manifest() -> PluginManifest:
    """Describe the calculator plugin to the core and the model."""
    return PluginManifest(
        name="calculator",
        title="Calculator",
        summary="Exact arithmetic and unit conversion (length, mass, temperature, volume, speed).",
        visibility="on-demand",
        when_to_use=[
            "any arithmetic beyond the trivial: percentages, interest, averages, roots, trig, logs",
            "converting between units: miles and km, °F and °C, pounds and kg, gallons and litres",
        ],
        when_not_to_use=[
            "algebra, solving equations or statistics over data: these tools only evaluate numbers",
            "currency conversion: exchange rates are not known here",
        ],
        examples=[
            Example(
                user="What is 17.5% of 2,340?",
                tool="calculate",
                args={"expression": "2340 * 17.5 / 100"},
            ),
            Example(
                user="How many km is a marathon of 26.2 miles?",
                tool="convert_units",
                args={"value": 26.2, "from_unit": "mi", "to_unit": "km"},
            ),
        ],
        tags=["math", "calculator", "arithmetic", "units", "conversion"],
        category="utilities",
    )


@hookimpl
def oracle_tools() -> list[Tool]:
    """Return the calculator's tools."""
    return [calculate, convert_units]
