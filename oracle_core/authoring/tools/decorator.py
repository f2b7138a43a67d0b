"""The ``@tool`` decorator: a typed function, sync or async, becomes a :class:`Tool`.

Decorating stays cheap because it runs at import for every tool of every plugin: it
checks the options and reads the description with a line scan; the signature, the
argument docs and the schema wait until they are first needed.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Sequence
from typing import Any, overload

from oracle_core.authoring.connections import check_connection_name
from oracle_core.authoring.manifest import VISIBILITIES, Visibility
from oracle_core.authoring.tools.docstrings import docstring_summary, summary
from oracle_core.authoring.tools.schema import Arguments
from oracle_core.authoring.tools.tool import TOOL_NAME_PATTERN, ApprovalPredicate, Tool
from oracle_core.errors import ToolDefinitionError


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    visibility: Visibility | None = None,
    timeout: float | None = None,
    connections: Sequence[str] = (),
    approval: bool | ApprovalPredicate | None = None,
    background: bool = False,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    visibility: Visibility | None = None,
    timeout: float | None = None,
    connections: Sequence[str] = (),
    approval: bool | ApprovalPredicate | None = None,
    background: bool = False,
    idempotent: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function, sync or async, into a :class:`Tool`.

    The name comes from the function, the description from the docstring (up to its
    ``Args:`` section), and each parameter's JSON schema from its type hint via pydantic; a
    line ``name: text`` under ``Args:`` becomes that parameter's description. A parameter
    annotated with :class:`ToolContext` receives the call's context and is left out of
    the schema.

    Use it bare (``@tool``) or with overrides (``@tool(name="x", visibility="always")``).
    ``connections=["github"]`` names connections of the plugin the tool needs: a call
    waits until each is set, and the tool reads them with :meth:`ToolContext.credential`.
    ``approval=True`` (or a predicate ``(arguments, context) -> bool``) makes a call wait
    for a person's approval; ``background=True`` makes a call return an operation id at
    once while the work goes on (docs/waits.md). ``idempotent=True`` declares that running
    a call twice with the same arguments does no harm: a call that was in flight when its
    process ended is run again when the run is resumed, instead of being reported to the
    model as interrupted (docs/scale-out.md).

    Raises:
        ToolDefinitionError: when a parameter has no type hint, the tool has no
            description, the name is not a valid function name, or the visibility is unknown.
    """

    def decorate(fn: Callable[..., Any]) -> Tool:
        return _build_tool(
            fn,
            name=name,
            description=description,
            visibility=visibility,
            timeout=timeout,
            connections=connections,
            approval=approval,
            background=background,
            idempotent=idempotent,
        )

    if function is not None:
        return decorate(function)
    return decorate


def _build_tool(
    fn: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    visibility: Visibility | None,
    timeout: float | None,
    connections: Sequence[str] = (),
    approval: bool | ApprovalPredicate | None = None,
    background: bool = False,
    idempotent: bool = False,
) -> Tool:
    tool_name = str(name or getattr(fn, "__name__", ""))
    where = (
        f"tool {tool_name!r} ({getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')})"
    )
    if not TOOL_NAME_PATTERN.fullmatch(tool_name):
        raise ToolDefinitionError(
            f"{where}: name must be 1 to 64 letters, digits, '_' or '-' (the providers' rule): "
            "pass @tool(name=...)"
        )
    if visibility is not None and visibility not in VISIBILITIES:
        raise ToolDefinitionError(
            f"{where}: visibility must be one of {VISIBILITIES}, not {visibility!r}"
        )
    needs = _connection_names(connections, where)
    if not (approval is None or isinstance(approval, bool) or callable(approval)):
        raise ToolDefinitionError(
            f"{where}: approval must be True, False, or a function (arguments, context) -> bool, "
            f"not {type(approval).__name__}"
        )
    if not isinstance(background, bool):
        raise ToolDefinitionError(f"{where}: background must be True or False")
    if not isinstance(idempotent, bool):
        raise ToolDefinitionError(f"{where}: idempotent must be True or False")
    text = (description or _description(fn)).strip()
    if not text:
        raise ToolDefinitionError(
            f"{where}: has no description: add a docstring or pass @tool(description=...)"
        )
    # The signature, type hints and argument docs are read on first need (see Arguments),
    # and the pydantic model and JSON schema built after them: a warm start reads none.
    return Tool(
        tool_name,
        text,
        None,
        fn,
        visibility,
        timeout,
        connections=needs,
        approval=approval,
        background=background,
        idempotent=idempotent,
        _arguments=Arguments(tool_name, where, function=fn),
    )


def _description(fn: Callable[..., Any]) -> str:
    """The description part of ``fn``'s docstring, as ``inspect.getdoc`` cleans it."""
    doc = fn.__doc__ if type(fn) is types.FunctionType else None
    if isinstance(doc, str):  # what getdoc cleans; read without cleaning all of it
        return docstring_summary(doc)
    return summary(inspect.getdoc(fn) or "")


def _connection_names(connections: Sequence[str], where: str) -> tuple[str, ...]:
    """The connection names a tool lists, checked (whether its plugin declares them is the
    validator's to say: the decorator cannot know the plugin)."""
    if not connections:
        return ()  # the usual case, on every @tool: nothing to check
    if isinstance(connections, str) or not all(isinstance(c, str) for c in connections):
        raise ToolDefinitionError(
            f"{where}: connections must be a list of connection names, e.g. "
            "@tool(connections=['github'])"
        )
    for name in connections:
        try:
            check_connection_name(name)
        except ValueError as error:
            raise ToolDefinitionError(f"{where}: {error}") from None
    return tuple(dict.fromkeys(connections))
