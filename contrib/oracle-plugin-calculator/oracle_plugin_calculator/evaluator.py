"""A safe arithmetic evaluator: Python's expression syntax, but numbers only.

The expression is parsed with :mod:`ast` and walked node by node; anything that is not a
number, an arithmetic operator, parentheses, a whitelisted function or a constant is refused
with an error naming it. Nothing is ever passed to ``eval``. Lengths, exponents and integer
sizes are bounded so that a short expression cannot make the process work for minutes.
"""

from __future__ import annotations

import ast
import difflib
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from oracle_core import ToolError

Number = int | float

MAX_LENGTH = 500
"""Longest expression accepted, in characters."""
MAX_INT_BITS = 10_000
"""Largest integer result, in bits (about 3,000 decimal digits)."""
MAX_ROUND_DIGITS = 100
"""Largest ``ndigits`` accepted by ``round`` either way."""
SIGNIFICANT_DIGITS = 15
"""Float results are rounded to this many significant digits, hiding binary noise (0.1 + 0.2)."""


class CalculationError(ToolError, ValueError):
    """An expression could not be evaluated; the message names the bad part and the fix."""


@dataclass(frozen=True)
class _Function:
    call: Callable[..., Any]
    min_args: int
    max_args: int | None


def _minimum(*values: Number) -> Number:
    return min(values)


def _maximum(*values: Number) -> Number:
    return max(values)


def _round(value: Number, ndigits: int | None = None) -> Number:
    if ndigits is None:
        return round(value)
    if not isinstance(ndigits, int):
        raise CalculationError(f"round(x, ndigits) needs a whole number of digits, not {ndigits}")
    if abs(ndigits) > MAX_ROUND_DIGITS:
        raise CalculationError(
            f"round(x, {ndigits}) asks for too many digits: use -{MAX_ROUND_DIGITS} to "
            f"{MAX_ROUND_DIGITS}"
        )
    return round(value, ndigits)


FUNCTIONS: dict[str, _Function] = {
    "sqrt": _Function(math.sqrt, 1, 1),
    "sin": _Function(math.sin, 1, 1),
    "cos": _Function(math.cos, 1, 1),
    "tan": _Function(math.tan, 1, 1),
    "log": _Function(math.log, 1, 2),
    "exp": _Function(math.exp, 1, 1),
    "abs": _Function(abs, 1, 1),
    "round": _Function(_round, 1, 2),
    "min": _Function(_minimum, 1, None),
    "max": _Function(_maximum, 1, None),
}
"""The functions an expression may call, with how many arguments each takes."""

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}
"""The names an expression may use as numbers."""

_BINARY: dict[type[ast.operator], tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_REFUSED_OPERATORS: dict[type[ast.AST], str] = {
    ast.BitXor: "'^' is not allowed: write powers with ** (2 ** 10)",
    ast.BitAnd: "'&' is not allowed: bitwise operators are not supported",
    ast.BitOr: "'|' is not allowed: bitwise operators are not supported",
    ast.LShift: "'<<' is not allowed: write 2 ** n * x instead",
    ast.RShift: "'>>' is not allowed: write x // 2 ** n instead",
    ast.MatMult: "'@' is not allowed: matrices are not supported",
    ast.Invert: "'~' is not allowed: bitwise operators are not supported",
    ast.Not: "'not' is not allowed: logic is not supported",
}
# Characters people (and models) write for operators that Python spells differently.
_TYPOGRAPHY = str.maketrans({"×": "*", "·": "*", "÷": "/", "−": "-", "–": "-"})

ALLOWED = (
    "numbers, + - * / // % **, parentheses, the functions "
    + ", ".join(FUNCTIONS)
    + " and the constants "
    + ", ".join(CONSTANTS)
)
"""What an expression may contain, as error messages say it."""


def evaluate(expression: str) -> Number:
    """Evaluate an arithmetic ``expression`` and return its value.

    Floats are rounded to :data:`SIGNIFICANT_DIGITS` significant digits; integers stay exact.

    Raises:
        CalculationError: naming the token that is not allowed, or what went wrong
            (division by zero, a result too large, a value outside a function's domain).
    """
    text = expression.translate(_TYPOGRAPHY).strip()
    if not text:
        raise CalculationError("The expression is empty: write one, like 2 * (3 + 4)")
    if len(text) > MAX_LENGTH:
        raise CalculationError(
            f"The expression is {len(text)} characters long; split it into steps of at most "
            f"{MAX_LENGTH} characters"
        )
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        where = f" at column {error.offset}" if error.offset else ""
        raise CalculationError(f"Could not parse {text!r}: {error.msg}{where}") from None
    except (RecursionError, MemoryError):
        raise CalculationError("The expression is nested too deeply; split it into steps") from None
    try:
        value = _Evaluator(text).visit(tree.body)
    except RecursionError:
        raise CalculationError("The expression is nested too deeply; split it into steps") from None
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    return value


class _Evaluator:
    def __init__(self, text: str) -> None:
        self.text = text

    def source(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or type(node).__name__

    def refuse(self, node: ast.AST, why: str | None = None) -> CalculationError:
        return CalculationError(why or f"{self.source(node)!r} is not allowed: use {ALLOWED}")

    def visit(self, node: ast.AST) -> Number:
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp):
            unary = _UNARY.get(type(node.op))
            if unary is None:
                raise self.refuse(node, _REFUSED_OPERATORS.get(type(node.op)))
            return self.checked(unary(self.visit(node.operand)), node)
        if isinstance(node, ast.BinOp):
            return self.binary(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Tuple):
            raise self.refuse(
                node,
                f"{self.source(node)!r} is not allowed: commas only separate a function's "
                "arguments; write 1000 rather than 1,000",
            )
        if isinstance(node, ast.Compare):
            raise self.refuse(
                node, f"{self.source(node)!r} is not allowed: comparisons are not supported"
            )
        raise self.refuse(node)

    def constant(self, node: ast.Constant) -> Number:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            kind = "complex numbers are not supported" if isinstance(value, complex) else ""
            raise self.refuse(
                node,
                f"{self.source(node)!r} is not a number"
                + (f": {kind}" if kind else f"; use {ALLOWED}"),
            )
        return self.checked(value, node)

    def name(self, node: ast.Name) -> Number:
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if node.id in FUNCTIONS:
            raise self.refuse(node, f"{node.id!r} is a function: call it, like {node.id}(2)")
        raise self.refuse(node, f"Unknown name {node.id!r}{_did_you_mean(node.id)}; use {ALLOWED}")

    def binary(self, node: ast.BinOp) -> Number:
        if isinstance(node.op, ast.Pow):
            left, right = self.visit(node.left), self.visit(node.right)
            return self.checked(_power(left, right), node)
        known = _BINARY.get(type(node.op))
        if known is None:
            raise self.refuse(node, _REFUSED_OPERATORS.get(type(node.op)))
        symbol, function = known
        left, right = self.visit(node.left), self.visit(node.right)
        try:
            result = function(left, right)
        except ZeroDivisionError:
            raise CalculationError(
                f"Division by zero in {self.source(node)!r} ('{symbol}' by 0)"
            ) from None
        except OverflowError:
            raise _too_large(self.source(node)) from None
        return self.checked(result, node)

    def call(self, node: ast.Call) -> Number:
        if not isinstance(node.func, ast.Name):
            raise self.refuse(
                node.func,
                f"{self.source(node.func)!r} is not allowed: call a function by its bare name, "
                f"one of {', '.join(FUNCTIONS)}",
            )
        name = node.func.id
        function = FUNCTIONS.get(name)
        if function is None:
            what = (
                "a constant, not a function"
                if name in CONSTANTS
                else f"not a known function{_did_you_mean(name)}"
            )
            raise self.refuse(
                node.func, f"{name!r} is {what}; the functions are {', '.join(FUNCTIONS)}"
            )
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            raise self.refuse(
                node, f"{self.source(node)!r}: pass {name}'s arguments in order, without names"
            )
        count = len(node.args)
        if count < function.min_args or (
            function.max_args is not None and count > function.max_args
        ):
            raise CalculationError(
                f"{name}() takes {_arity(function)}, but {self.source(node)!r} passes {count}"
            )
        args = [self.visit(arg) for arg in node.args]
        try:
            result = function.call(*args)
        except CalculationError:
            raise
        except ZeroDivisionError:
            raise CalculationError(f"Division by zero in {self.source(node)!r}") from None
        except OverflowError:
            raise _too_large(self.source(node)) from None
        except (ValueError, TypeError) as error:
            raise CalculationError(
                f"{self.source(node)!r} is undefined ({error}); check the arguments of {name}"
            ) from None
        return self.checked(result, node)

    def checked(self, value: Any, node: ast.AST) -> Number:
        """Refuse results that are not finite real numbers or that grow without bound."""
        if isinstance(value, complex):
            raise CalculationError(
                f"{self.source(node)!r} has no real result (it would be a complex number)"
            )
        if isinstance(value, int) and not isinstance(value, bool):
            if value.bit_length() > MAX_INT_BITS:
                raise _too_large(self.source(node))
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise _too_large(self.source(node))
            return value
        raise self.refuse(node)


def _power(base: Number, exponent: Number) -> Any:
    # Refuse before computing: 9 ** 9 ** 9 would otherwise run for hours.
    exact = isinstance(base, int) and isinstance(exponent, int)
    if exact and exponent > 0 and abs(base) > 1 and exponent * math.log2(abs(base)) > MAX_INT_BITS:
        raise _too_large(f"{base} ** {exponent}")
    try:
        return base**exponent
    except ZeroDivisionError:
        raise CalculationError(f"0 ** {exponent} divides by zero") from None
    except OverflowError:
        raise _too_large(f"{base} ** {exponent}") from None


def _too_large(what: str) -> CalculationError:
    return CalculationError(
        f"{what!r} is too large to compute (results are limited to about "
        f"{int(MAX_INT_BITS * math.log10(2)):,} digits and floats to about 1.8e308)"
    )


def _arity(function: _Function) -> str:
    low, high = function.min_args, function.max_args
    if high is None:
        return f"at least {low} argument{'s' * (low != 1)}"
    if low == high:
        return f"{low} argument{'s' * (low != 1)}"
    return f"{low} to {high} arguments"


def _did_you_mean(name: str) -> str:
    close = difflib.get_close_matches(name, [*FUNCTIONS, *CONSTANTS], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
