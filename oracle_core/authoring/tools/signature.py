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
from oracle_core.authoring.tools.docstrings import argument_docs
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
        hints = _plain_hints(fn)
        if hints is None:
            hints = typing.get_type_hints(fn, include_extras=True)
    except NameError as error:
        raise ToolDefinitionError(
            f"{where}: a type hint cannot be resolved ({error}): define its type at module level"
        ) from None
    arg_docs = argument_docs(inspect.getdoc(fn) or "")
    parameters: list[Parameter] = []
    context_parameter: str | None = None
    for name, variadic, default in _parameters(fn):
        if variadic:
            raise ToolDefinitionError(f"{where}: *{name} is not supported: name every parameter")
        if name not in hints:
            raise ToolDefinitionError(
                f"{where}: parameter {name!r} has no type hint: annotate it (e.g. {name}: str)"
            )
        hint = hints[name]
        if is_context(hint):
            context_parameter = name
            continue
        parameters.append(
            Parameter(name, hint, ... if default is _EMPTY else default, arg_docs.get(name))
        )
    return tuple(parameters), context_parameter


_EMPTY = inspect.Parameter.empty

_ALIASES = (types.GenericAlias, types.UnionType)


def _plain_hints(fn: Callable[..., Any]) -> dict[str, Any] | None:
    """What ``typing.get_type_hints(fn, include_extras=True)`` returns, when each of a plain
    function's annotations is ``None``, a class, or ``list[...]``, ``dict[...]`` or
    ``X | Y`` of those (the usual hints; nothing to resolve); else ``None``.

    ``get_type_hints`` gives such an annotation back as it is (``None`` as ``NoneType``),
    at some microseconds a tool.
    """
    if type(fn) is not types.FunctionType:
        return None
    annotations = fn.__annotations__
    if not isinstance(annotations, dict):
        return None
    hints: dict[str, Any] = {}
    for name, hint in annotations.items():
        if hint is None:
            hints[name] = type(None)
            continue
        stack = [hint]
        while stack:
            part = stack.pop()
            if type(part) in _ALIASES and not getattr(part, "__unpacked__", False):
                stack.extend(part.__args__)
            elif type(part) is not type:
                return None  # a string, typing's own forms, Annotated...: resolved by typing
        hints[name] = hint
    return hints


def _parameters(fn: Callable[..., Any]) -> list[tuple[str, bool, Any]]:
    """Each parameter of ``fn`` in order: its name, whether it is ``*args`` or ``**kwargs``,
    and its default (``inspect.Parameter.empty`` when it has none).

    A plain function's are read off its code object, exactly as ``inspect.signature``
    reads them (which costs more than the rest of reading a simple tool); anything else
    (wrapped, decorated or given a signature, methods, callable objects) goes through
    ``inspect.signature``.
    """
    if type(fn) is not types.FunctionType or fn.__dict__:
        return [
            (p.name, p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD), p.default)
            for p in inspect.signature(fn).parameters.values()
        ]
    code = fn.__code__
    count, keyword = code.co_argcount, code.co_kwonlyargcount
    names = code.co_varnames
    defaults = fn.__defaults__ or ()
    first = count - len(defaults)
    found = [
        (name, False, defaults[index - first] if index >= first else _EMPTY)
        for index, name in enumerate(names[:count])
    ]
    at = count + keyword  # *args, then **kwargs, come after the keyword-only names
    if code.co_flags & inspect.CO_VARARGS:
        found.append((names[at], True, _EMPTY))
        at += 1
    given = fn.__kwdefaults__ or {}
    found += [(name, False, given.get(name, _EMPTY)) for name in names[count : count + keyword]]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        found.append((names[at], True, _EMPTY))
    return found


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
        if type(hint) is type:  # a plain class (``str``, most hints): it names no others
            if hint.__module__ != "builtins":
                found.append(hint)
            continue
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
    if type(hint) is type:  # a plain class, the usual hint: no origin to look into
        return hint is ToolContext
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return is_context(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return any(is_context(arg) for arg in typing.get_args(hint))
    return False
