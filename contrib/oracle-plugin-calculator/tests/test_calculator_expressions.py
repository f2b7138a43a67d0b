"""The calculate tool: what it computes, and what it refuses with which message."""

from __future__ import annotations

import pytest
from oracle_plugin_calculator import CalculationError, calculate


async def result_of(expression: str) -> object:
    answer = await calculate.call({"expression": expression})
    assert answer["expression"] == expression
    return answer["result"]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2340 * 17.5 / 100", 409.5),
        ("7 // 2", 3),
        ("7 % 3", 1),
        ("-(2 + 3) * 4", -20),
        ("2 ** 10", 1024),
        ("2 ** -2", 0.25),
        ("1000 * (1 + 0.05) ** 10", 1628.89462677744),
        ("sqrt(16)", 4.0),
        ("round(2.567, 2)", 2.57),
        ("min(3, 1, 2) + max(4, 9)", 10),
        ("log(8, 2)", 3.0),
        ("exp(0) + abs(-2)", 3.0),
        ("sin(pi / 2) + cos(0) + tan(0)", 2.0),
        ("e", 2.71828182845905),
        ("1.5e3 + 2", 1502.0),
    ],
)
async def test_arithmetic_gives_the_exact_answer(expression: str, expected: float) -> None:
    assert await result_of(expression) == expected


async def test_integers_stay_exact_however_long() -> None:
    assert (
        await result_of("2 ** 200") == 1606938044258990275541962092341162602522202993782792835301376
    )


async def test_binary_rounding_noise_is_hidden() -> None:
    assert await result_of("0.1 + 0.2") == 0.3


async def test_typographic_operators_are_understood() -> None:
    assert await result_of("6 × 7 − 2 ÷ 2") == 41.0


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("2 ^ 8", "'^' is not allowed: write powers with **"),
        ("__import__('os')", "'__import__' is not a known function"),
        ("(1).real", "'(1).real' is not allowed"),
        ("x + 1", "Unknown name 'x'"),
        ("sqr(9)", "'sqr' is not a known function (did you mean 'sqrt'?)"),
        ("pi(2)", "'pi' is a constant, not a function"),
        ("sqrt + 1", "'sqrt' is a function: call it, like sqrt(2)"),
        ("'ten' * 2", "\"'ten'\" is not a number"),
        ("1,000 + 1", "write 1000 rather than 1,000"),
        ("2 < 3", "comparisons are not supported"),
        ("1j * 2", "complex numbers are not supported"),
        ("[1, 2]", "'[1, 2]' is not allowed"),
        ("round(2.5, ndigits=1)", "pass round's arguments in order"),
        ("sqrt(1, 2)", "sqrt() takes 1 argument, but 'sqrt(1, 2)' passes 2"),
        ("2 +* 3", "Could not parse '2 +* 3'"),
    ],
)
async def test_anything_but_arithmetic_is_refused_naming_the_token(
    expression: str, message: str
) -> None:
    with pytest.raises(CalculationError) as raised:
        await calculate.call({"expression": expression})

    assert message in str(raised.value)


async def test_refusals_list_what_is_allowed() -> None:
    with pytest.raises(CalculationError) as raised:
        await calculate.call({"expression": "x"})

    assert "the functions sqrt, sin, cos, tan, log, exp, abs, round, min, max" in str(raised.value)
    assert "the constants pi, e" in str(raised.value)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1 / 0", "Division by zero in '1 / 0'"),
        ("5 // (2 - 2)", "Division by zero"),
        ("sqrt(-1)", "'sqrt(-1)' is undefined (math domain error)"),
        ("log(0)", "'log(0)' is undefined"),
        ("(-8) ** (1 / 3)", "has no real result"),
    ],
)
async def test_undefined_results_are_explained(expression: str, message: str) -> None:
    with pytest.raises(CalculationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await calculate.call({"expression": expression})


@pytest.mark.parametrize(
    "expression",
    ["9 ** 9 ** 9", "10 ** 5000", "exp(1000)", "1e308 * 10", "10 ** 400 / 3", "2.0 ** 10 ** 400"],
)
async def test_huge_results_are_refused_before_they_are_computed(expression: str) -> None:
    with pytest.raises(CalculationError, match="is too large to compute"):
        await calculate.call({"expression": expression})


async def test_round_refuses_absurd_digit_counts() -> None:
    with pytest.raises(CalculationError, match="too many digits"):
        await calculate.call({"expression": "round(5, -1000000000)"})


async def test_long_expressions_are_refused() -> None:
    with pytest.raises(CalculationError, match="501 characters long; split it into steps"):
        await calculate.call({"expression": "1+" * 250 + "1"})


async def test_deep_nesting_is_refused_without_crashing() -> None:
    with pytest.raises(CalculationError, match="Could not parse"):
        await calculate.call({"expression": "(" * 240 + "1" + ")" * 240})
