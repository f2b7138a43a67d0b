"""A tool: a function the model may call, with its name, description and lazily built schema.

Made with the :func:`~oracle_core.authoring.tools.decorator.tool` decorator, or by hand
from a ready JSON schema. The functions after the class give the start-up cache and the
validator what they read of a tool's schema without reaching into it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from oracle_core.authoring.context import ToolContext
from oracle_core.authoring.manifest import Visibility
from oracle_core.authoring.tools.schema import Arguments
from oracle_core.errors import ToolArgumentsError
from oracle_core.values.messages import function_definition

ApprovalPredicate = Callable[[Mapping[str, Any], ToolContext], bool]
"""Decides per call whether it needs approval, from the validated arguments and the context."""

TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""Tool names as providers accept them (OpenAI, Anthropic); always matched whole."""


@dataclass(frozen=True, eq=False, init=False)
class Tool:
    """A function the model may call, with its name, description and JSON schema.

    Make one with :func:`~oracle_core.tool`; the core binds every tool when the oracle is
    built. Tools compare by identity. The JSON schema and the argument model are built on
    first need (see :meth:`prepare`), so decorating a function stays cheap.

    Attributes:
        name: the name the model calls it by.
        description: what it does, from the docstring's first section.
        function: the wrapped function, sync or async.
        visibility: overrides the plugin's tier for this tool when set.
        timeout: seconds the call may take before the runtime abandons it (``None``: default).
        connections: the connections of its plugin it needs (read with
            :meth:`ToolContext.credential`); a call waits until each one is set.
        approval: whether a call needs a person's approval before it runs: ``True``,
            ``False``, or a predicate ``(arguments, context) -> bool`` over the validated
            arguments; ``None`` (the default) follows the plugin's ``approval`` default.
            See docs/waits.md.
        background: a call returns an operation id at once and the work goes on; the
            model inspects it with ``get_operation`` (see docs/waits.md).
        idempotent: running a call twice with the same arguments does no harm; a call that
            was in flight when its process ended is run again when the run is resumed
            (otherwise the model is told it was interrupted; docs/scale-out.md).
    """

    name: str
    description: str
    function: Callable[..., Any]
    visibility: Visibility | None = None
    timeout: float | None = None
    connections: tuple[str, ...] = ()
    approval: bool | ApprovalPredicate | None = None
    background: bool = False
    idempotent: bool = False
    _arguments: Arguments = field(default=None, repr=False)  # type: ignore[assignment]

    def __init__(
        self,
        name: str,
        description: str,
        parameters: dict[str, Any] | None = None,
        function: Callable[..., Any] | None = None,
        visibility: Visibility | None = None,
        timeout: float | None = None,
        args_model: type[BaseModel] | None = None,
        context_parameter: str | None = None,
        *,
        connections: Sequence[str] = (),
        approval: bool | ApprovalPredicate | None = None,
        background: bool = False,
        idempotent: bool = False,
        _arguments: Arguments | None = None,
    ) -> None:
        """A tool from a ready JSON schema (``parameters``) and optional argument model.

        :func:`tool` is the usual way to make one; it passes ``_arguments`` (the lazily
        built schema) instead of ``parameters``, which ``dataclasses.replace`` keeps.
        Without ``args_model`` the tool accepts any arguments and passes none on.
        """
        if function is None:
            raise TypeError(f"tool {name!r}: give the function it calls")
        if parameters is not None:  # a ready schema wins (also over replace()'s copy)
            _arguments = Arguments(
                name,
                f"tool {name!r}",
                _arguments.parameters if _arguments is not None else (),
                schema=parameters,
                model=args_model or _given_model(_arguments),
                context=context_parameter
                if context_parameter is not None or _arguments is None
                else _arguments.context_parameter,
            )
        elif _arguments is None:
            raise TypeError(f"tool {name!r}: give parameters (a JSON schema), or use @tool")
        for key, value in (
            ("name", name),
            ("description", description),
            ("function", function),
            ("visibility", visibility),
            ("timeout", timeout),
            ("connections", tuple(connections)),
            ("approval", approval),
            ("background", background),
            ("idempotent", idempotent),
            ("_arguments", _arguments),
        ):
            object.__setattr__(self, key, value)

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of its arguments (OpenAI function-calling format), built once.

        Raises:
            ToolDefinitionError: when pydantic cannot describe a parameter's type.
        """
        return self._arguments.schema()

    @property
    def context_parameter(self) -> str | None:
        """The parameter that receives the call's :class:`ToolContext` (never in the schema)."""
        return self._arguments.context_parameter

    @property
    def args_model(self) -> type[BaseModel]:
        """The pydantic model its arguments are validated with, built once."""
        return self._arguments.model()

    @property
    def is_async(self) -> bool:
        """Whether the wrapped function is a coroutine function."""
        return inspect.iscoroutinefunction(self.function)

    def prepare(self) -> None:
        """Build the JSON schema and the argument model now, instead of on first need.

        The validator calls it, so a type pydantic cannot describe is reported when the
        plugin is checked, not in the middle of a run. Parameters of simple types cannot
        fail to validate, so their model is still left for the first call.

        Raises:
            ToolDefinitionError: naming the parameter whose type pydantic cannot describe.
        """
        self._arguments.schema()
        if not self._arguments.simple:
            self._arguments.model()

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI ``tools`` entry (``{"type": "function", ...}``)."""
        return function_definition(self.name, self.description, self.parameters)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate ``arguments`` against the schema and return the keyword arguments.

        Raises:
            ToolArgumentsError: naming every field that is missing, unknown or of a wrong type.
        """
        args_model = self.args_model
        try:
            model = args_model.model_validate(dict(arguments))
        except ValidationError as error:
            problems = []
            for item in error.errors():
                where = ".".join(str(p) for p in item["loc"]) or "arguments"
                problems.append(f"{where}: {item['msg']}")
            raise ToolArgumentsError(
                f"invalid arguments for {self.name}: " + "; ".join(problems)
            ) from None
        kwargs = {name: getattr(model, name) for name in type(model).model_fields}
        kwargs.update(model.__pydantic_extra__ or {})  # an args model that takes any field
        return kwargs

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


def _given_model(arguments: Arguments | None) -> type[BaseModel] | None:
    """The model a copied tool keeps: a hand-made tool's own, else built from its parameters."""
    if arguments is None:
        return BaseModel
    return arguments.model() if arguments.given else None


def tool_fingerprint(tool: Tool) -> str:
    """A digest of what ``tool``'s JSON schema is built from (see :func:`prime_schema`)."""
    return tool._arguments.fingerprint()


def hint_classes(tool: Tool) -> list[type]:
    """The classes ``tool``'s type hints name, read without resolving them when possible.

    The start-up cache keys a tool's schema by the files that define these classes.
    """
    return tool._arguments.hint_classes()


def simple_parameters(tool: Tool) -> bool:
    """Whether every parameter of ``tool`` is of a simple type (its model cannot fail)."""
    return tool._arguments.simple


def plain_schema(tool: Tool) -> bool:
    """Whether ``tool``'s JSON schema, once built, was written from simple types (plain
    JSON without ``$ref``: the validator need not encode it to check that)."""
    return tool._arguments.plain


def schema_stored(tool: Tool, parameters: Callable[[], Any]) -> None:
    """``tool``'s built JSON schema is stored where ``parameters()`` reads it back: the
    tool lets go of it and reads it from there when next needed (a cold start then does not
    hold every schema of a large catalog at once). A schema given ready-made is kept."""
    tool._arguments.stored(parameters)


def prime_schema(tool: Tool, parameters: Callable[[], Any]) -> None:
    """Give ``tool`` its JSON schema from the start-up cache instead of building it.

    Only for a schema that was built for a tool with the same :func:`tool_fingerprint`
    from unchanged files; a schema already known is kept. ``parameters`` is called when
    the schema is first needed (a warm start reads no schema it does not show).
    """
    tool._arguments.prime(parameters)
