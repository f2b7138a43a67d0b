"""A ``@tool`` function's parameters and hints read directly, as ``inspect`` and ``typing`` read them.

A cold start reads every tool's signature, so a plain function's parameters come off its
code object and its usual hints (classes, ``list[...]``, ``dict[...]``, unions of them)
are taken as written; these tests hold both to ``inspect.signature`` and
``typing.get_type_hints``.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pytest

from oracle_core import ToolContext, ToolDefinitionError, tool
from oracle_core.authoring.tools.signature import read_signature


def _positional_only(a: int, /, b: str = "b") -> None:
    """P."""


def _keyword_only(a: int, *, b: str, c: float = 1.5) -> None:
    """K."""


def _all_kinds(a: int, b: str = "b", *, c: bool = True, ctx: ToolContext) -> None:
    """A."""


def _with_args(a: int, *rest: int, b: str = "b") -> None:
    """R."""


def _with_kwargs(a: int, b: str = "b", **rest: int) -> None:
    """K."""


def _unannotated_before_args(a, *rest: int) -> None:  # type: ignore[no-untyped-def]
    """U."""


def _reference(fn: Callable[..., Any], where: str) -> Any:
    """What reading through ``inspect.signature`` gives (names, defaults, context; or the
    error message)."""
    hints = typing.get_type_hints(fn, include_extras=True)
    found, context = [], None
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            return f"{where}: *{p.name} is not supported: name every parameter"
        if p.name not in hints:
            return (
                f"{where}: parameter {p.name!r} has no type hint: annotate it (e.g. {p.name}: str)"
            )
        if hints[p.name] is ToolContext:
            context = p.name
            continue
        found.append((p.name, hints[p.name], ... if p.default is p.empty else p.default))
    return found, context


@pytest.mark.parametrize(
    "fn",
    [_positional_only, _keyword_only, _all_kinds, _with_args, _with_kwargs,
     _unannotated_before_args],
)  # fmt: skip
def test_parameters_read_off_the_code_are_those_inspect_signature_gives(
    fn: Callable[..., Any],
) -> None:
    try:
        parameters, context = read_signature(fn, "tool 't'")
        got: Any = [(p.name, p.hint, p.default) for p in parameters], context
    except ToolDefinitionError as error:
        got = str(error)
    assert got == _reference(fn, "tool 't'")


def test_a_wrapped_function_is_read_through_its_signature() -> None:
    def inner(city: str, days: int = 3) -> str:
        """Inner."""
        return city

    @functools.wraps(inner)
    def outer(*args: Any, **kwargs: Any) -> str:
        return inner(*args, **kwargs)

    made = tool(outer)
    assert list(made.parameters["properties"]) == ["city", "days"]
    assert made.parameters["properties"]["days"]["default"] == 3


class Point:
    """A class of this module (not a builtin)."""


def _hinted(
    a: str,
    b: list[str],
    c: dict[str, int] | None,
    d: Point | None,
    e: list[dict[str, float]] | None = None,
    f: int = 1,
    g: Annotated[int, "meta"] = 2,
    h: Literal["x", "y"] = "x",
    i: tuple[int, ...] = (),
    j: typing.Optional[str] = None,  # noqa: UP045 - typing's own form, on purpose
    k: None = None,
) -> str:
    """H."""
    return a


def _usual(
    a: str,
    b: list[str],
    c: dict[str, int] | None,
    d: Point | None,
    e: list[dict[str, float]] | None = None,
    k: None = None,
) -> str:
    """U."""
    return a


@pytest.mark.parametrize("fn", [_usual, _hinted])
def test_hints_read_as_written_are_those_get_type_hints_gives(fn: Callable[..., Any]) -> None:
    parameters, _ = read_signature(fn, "tool 't'")
    hints = typing.get_type_hints(fn, include_extras=True)
    assert [(p.name, p.hint) for p in parameters] == [
        (name, hint) for name, hint in hints.items() if name != "return"
    ]
