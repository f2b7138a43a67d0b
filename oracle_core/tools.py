"""Tools: typed Python functions the model may call, made with the ``@tool`` decorator."""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from oracle_core.context import ToolContext
from oracle_core.errors import ToolArgumentsError, ToolDefinitionError
from oracle_core.manifest import VISIBILITIES, Visibility

TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""Tool names as providers accept them (OpenAI, Anthropic); always matched whole."""
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$")


@dataclass(frozen=True, eq=False)
class Tool:
    """A function the model may call, with its name, description and JSON schema.

    Make one with :func:`tool`; the core binds every tool when the oracle is built. Tools
    compare by identity.

    Attributes:
        name: the name the model calls it by.
        description: what it does, from the docstring's first section.
        parameters: the JSON schema of its arguments (OpenAI function-calling format).
        function: the wrapped function, sync or async.
        visibility: overrides the plugin's tier for this tool when set.
        timeout: seconds the call may take before the runtime abandons it (``None``: default).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]
    visibility: Visibility | None = None
    timeout: float | None = None
    args_model: type[BaseModel] = field(default=BaseModel, repr=False)
    context_parameter: str | None = field(default=None, repr=False)

    @property
    def is_async(self) -> bool:
        """Whether the wrapped function is a coroutine function."""
        return inspect.iscoroutinefunction(self.function)

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI ``tools`` entry (``{"type": "function", ...}``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate ``arguments`` against the schema and return the keyword arguments.

        Raises:
            ToolArgumentsError: naming every field that is missing, unknown or of a wrong type.
        """
        try:
            model = self.args_model.model_validate(dict(arguments))
        except ValidationError as error:
            problems = []
            for item in error.errors():
                where = ".".join(str(p) for p in item["loc"]) or "arguments"
                problems.append(f"{where}: {item['msg']}")
            raise ToolArgumentsError(
                f"invalid arguments for {self.name}: " + "; ".join(problems)
            ) from None
        return {name: getattr(model, name) for name in type(model).model_fields}

    def bind(
        self, arguments: Mapping[str, Any], context: ToolContext | None = None
    ) -> functools.partial[Any]:
        """The function with validated ``arguments`` (and the context, if it asks) applied.

        Raises:
            ToolArgumentsError: when the arguments do not fit the schema.
        """
        kwargs = self.validate(arguments)
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context or ToolContext()
        return functools.partial(self.function, **kwargs)

    async def call(self, arguments: Mapping[str, Any], context: ToolContext | None = None) -> Any:
        """Validate ``arguments`` and run the tool; sync functions run in a worker thread.

        The run loop does not use this: its tool executor runs sync tools on the oracle's
        own bounded pool, with timeouts. This is for calling a tool directly.
        """
        bound = self.bind(arguments, context)
        if self.is_async:
            return await cast(Callable[..., Awaitable[Any]], bound)()
        return await asyncio.to_thread(bound)


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    visibility: Visibility | None = None,
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    visibility: Visibility | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function, sync or async, into a :class:`Tool`.

    The name comes from the function, the description from the docstring (up to its
    ``Args:`` section), and each parameter's JSON schema from its type hint via pydantic; a
    line ``name: text`` under ``Args:`` becomes that parameter's description. A parameter
    annotated with :class:`ToolContext` receives the call's context and is left out of
    the schema.

    Use it bare (``@tool``) or with overrides (``@tool(name="x", visibility="always")``).

    Raises:
        ToolDefinitionError: when a parameter has no type hint, the tool has no
            description, the name is not a valid function name, or the visibility is unknown.
    """

    def decorate(fn: Callable[..., Any]) -> Tool:
        return _build_tool(
            fn, name=name, description=description, visibility=visibility, timeout=timeout
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
    summary, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
    text = (description or summary).strip()
    if not text:
        raise ToolDefinitionError(
            f"{where}: has no description: add a docstring or pass @tool(description=...)"
        )

    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except NameError as error:
        raise ToolDefinitionError(
            f"{where}: a type hint cannot be resolved ({error}): define its type at module level"
        ) from None
    fields: dict[str, Any] = {}
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
        if _is_context(hint):
            context_parameter = parameter.name
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (hint, Field(default, description=arg_docs.get(parameter.name)))

    args_model = create_model(
        f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    schema = _strip_titles(args_model.model_json_schema())
    schema.setdefault("properties", {})
    return Tool(
        name=tool_name,
        description=text,
        parameters=schema,
        function=fn,
        visibility=visibility,
        timeout=timeout,
        args_model=args_model,
        context_parameter=context_parameter,
    )


def _is_context(hint: Any) -> bool:
    """Whether ``hint`` asks for the call context: ``ToolContext``, optional or annotated.

    An optional or annotated context must never reach the schema, or the model could set it.
    """
    if hint is ToolContext:
        return True
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return _is_context(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_is_context(arg) for arg in typing.get_args(hint))
    return False


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and ``Args:`` descriptions."""
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in doc.splitlines():
        header = _SECTION.match(line.strip())
        if header and not line.startswith((" ", "\t")):
            section = header.group(1)
            current = None
            continue
        if section is None:
            description.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            item = re.match(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
            if item and (len(line) - len(line.lstrip())) <= 4:
                current = item.group(1)
                args[current] = item.group(2).strip()
            elif current and line.strip():
                args[current] = f"{args[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), args


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's generated ``title`` keys: they cost the model tokens and say nothing."""
    if isinstance(node, dict):
        cleaned: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs") and isinstance(value, dict):
                cleaned[key] = {name: _strip_titles(sub) for name, sub in value.items()}
            else:
                cleaned[key] = _strip_titles(value)
        return cleaned
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    return node
