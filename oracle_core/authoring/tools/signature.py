"""Reading a ``@tool`` function's signature: the parameters the model fills in, and their types.

Only read on first need (see :class:`~oracle_core.authoring.tools.schema.Arguments`):
resolving type hints and parsing the docstring's ``Args:`` cost more than decorating.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from oracle_core.authoring.context import ToolContext
from oracle_core.authoring.tools.docstrings import parse_docstring
from oracle_core.errors import ToolDefinitionError


@dataclass(frozen=True)
class Parameter:
    """One parameter the model fills in, as the decorator read it from the signature."""

    name: str
    hint: Any
    default: Any  # ``...`` when the parameter is required
    description: str | None


def read_signature(fn: Callable[..., Any], where: str) -> tuple[tuple[Parameter, ...], str | None]:
    """The parameters the model fills in, and the context parameter, of a ``@tool`` function.

    Raises:
        ToolDefinitionError: when a parameter has no type hint, a hint cannot be resolved,
            or the function takes ``*args`` / ``**kwargs``.
    """
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except NameError as error:
        raise ToolDefinitionError(
            f"{where}: a type hint cannot be resolved ({error}): define its type at module level"
        ) from None
    arg_docs = parse_docstring(inspect.getdoc(fn) or "")[1]
    parameters: list[Parameter] = []
    context_parameter: str | None = None
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"{where}: *{parameter.name} is not supported: name every parameter"
            )
        if parameter.name not in hints:
            raise ToolDefinitionError(
                f"{where}: parameter {parameter.name!r} has no type hint: annotate it (e.g. {parameter.name}: str)"
            )
        hint = hints[parameter.name]
        if is_context(hint):
            context_parameter = parameter.name
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        parameters.append(Parameter(parameter.name, hint, default, arg_docs.get(parameter.name)))
    return tuple(parameters), context_parameter


def raw_annotations(fn: Callable[..., Any]) -> dict[str, Any] | None:
    """A plain function's annotations as written (strings when postponed), else ``None``."""
    if not isinstance(fn, types.FunctionType):
        return None
    annotations = fn.__annotations__
    return annotations if isinstance(annotations, dict) else None


def hint_classes_of(hints: Iterable[Any]) -> list[type]:
    """The classes ``hints`` name, at any depth of ``list[...]``, unions, ``Annotated``...

    Builtins are left out (no file defines them).
    """
    found: list[type] = []
    stack = list(hints)
    while stack:
        hint = stack.pop()
        if isinstance(hint, type) and hint.__module__ != "builtins":
            found.append(hint)
        if getattr(hint, "__args__", None):
            stack.extend(typing.get_args(hint))
    return found


def hint_name(hint: Any) -> str:
    """A type hint as it reads in code (``list[str] | None``, ``mymodule.Point``)."""
    if isinstance(hint, type) and not typing.get_args(hint):
        return (
            f"{hint.__module__}.{hint.__qualname__}"
            if hint.__module__ != "builtins"
            else hint.__qualname__
        )
    return repr(hint)


def is_context(hint: Any) -> bool:
    """Whether ``hint`` asks for the call context: ``ToolContext``, optional or annotated.

    An optional or annotated context must never reach the schema, or the model could set it.
    """
    if hint is ToolContext:
        return True
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return is_context(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return any(is_context(arg) for arg in typing.get_args(hint))
    return False
