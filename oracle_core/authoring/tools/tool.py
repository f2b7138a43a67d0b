"""Tools: typed Python functions the model may call, made with the ``@tool`` decorator."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import math
import re
import threading
import types
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast, overload

from docstring_parser import ParseError, google
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PydanticUserError,
    TypeAdapter,
    ValidationError,
    create_model,
)

from oracle_core.authoring.connections import check_connection_name
from oracle_core.authoring.context import ToolContext
from oracle_core.authoring.manifest import VISIBILITIES, Visibility
from oracle_core.errors import ToolArgumentsError, ToolDefinitionError

ApprovalPredicate = Callable[[Mapping[str, Any], ToolContext], bool]
"""Decides per call whether it needs approval, from the validated arguments and the context."""

TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""Tool names as providers accept them (OpenAI, Anthropic); always matched whole."""
# The Google-style sections docstring_parser knows, and notes: a description ends at the first.
_SECTIONS = (*(section.title for section in google.DEFAULT_SECTIONS), "Note", "Notes")
_SECTION = re.compile(rf"^({'|'.join(map(re.escape, _SECTIONS))}):\s*$")


@dataclass(frozen=True)
class _Parameter:
    """One parameter the model fills in, as the decorator read it from the signature."""

    name: str
    hint: Any
    default: Any  # ``...`` when the parameter is required
    description: str | None


class _Arguments:
    """A tool's argument model and JSON schema, built on first need and then kept.

    Building them with pydantic costs about a millisecond a tool, so ``@tool`` only reads
    the signature and this builds the rest the first time a request shows the tool, a call
    validates its arguments, or the validator checks it. Simple parameters (``str``,
    ``int``, ``float``, ``bool``, lists and string-keyed dicts of them, each optional) get
    their JSON schema without pydantic, exactly as pydantic writes it; the model for
    validation is still pydantic's. Thread-safe: runs and assembly may ask at once.
    """

    def __init__(
        self,
        name: str,
        where: str,
        parameters: Sequence[_Parameter] = (),
        *,
        schema: dict[str, Any] | None = None,
        model: type[BaseModel] | None = None,
        context: str | None = None,
        function: Callable[..., Any] | None = None,
    ) -> None:
        self.name = name
        self.where = where
        self._parameters: tuple[_Parameter, ...] | None = tuple(parameters)
        self._context = context
        self._function = function
        if function is not None:
            self._parameters = None  # read from the signature on first need
        self._read_error: ToolDefinitionError | None = None
        self._lock = threading.RLock()
        self._schema = schema
        self._primer: Callable[[], Any] | None = None
        self._model = model
        self._error: ToolDefinitionError | None = None
        self._given = schema is not None

    @property
    def parameters(self) -> tuple[_Parameter, ...]:
        """The parameters the model fills in, read from the function's signature once.

        Raises:
            ToolDefinitionError: when a parameter has no type hint, a hint cannot be
                resolved, or the function takes ``*args`` / ``**kwargs``.
        """
        if self._parameters is None:
            with self._lock:
                if self._parameters is None:
                    self._read()
        assert self._parameters is not None
        return self._parameters

    @property
    def context_parameter(self) -> str | None:
        """The parameter that receives the call's :class:`ToolContext`, if the tool asks."""
        self.parameters  # noqa: B018 - reads the signature, which names it
        return self._context

    def _read(self) -> None:
        if self._read_error is not None:
            raise self._read_error
        assert self._function is not None
        try:
            self._parameters, self._context = _read_signature(self._function, self.where)
        except ToolDefinitionError as error:
            self._read_error = error
            raise

    @property
    def given(self) -> bool:
        """Whether the schema was given ready-made (a hand-made tool), not read from a function."""
        return self._given

    @property
    def simple(self) -> bool:
        """Whether every parameter's type cannot fail to validate (no pydantic check needed)."""
        return not self._given and all(_simple_schema(p.hint) is not None for p in self.parameters)

    def schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (OpenAI function-calling format)."""
        if self._schema is None:
            with self._lock:
                if self._schema is None:
                    self._schema = self._primed() or self._build_schema()
        return self._schema

    def model(self) -> type[BaseModel]:
        """The pydantic model arguments are validated with."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._build_model()
        return self._model

    def prime(self, schema: Callable[[], Any]) -> None:
        """Take what ``schema()`` returns as the JSON schema, when it is first needed.

        For a cache that built the schema for this signature: reading it is left until a
        request shows the tool. Should it give no JSON object then, the schema is built.
        """
        with self._lock:
            if self._schema is None:
                self._primer = schema

    def _primed(self) -> dict[str, Any] | None:
        primer, self._primer = self._primer, None
        if primer is None:
            return None
        try:
            schema = primer()
        except ValueError:
            return None
        return schema if isinstance(schema, dict) else None

    def fingerprint(self) -> str:
        """A digest of everything the schema is built from, for the start-up cache.

        Two tools with the same fingerprint get the same schema, as long as the types
        they name are defined by unchanged files (the cache checks those separately).
        A tool made with ``@tool`` is fingerprinted from its function as written (its
        raw annotations, defaults and docstring), so that a warm start reads no signature.
        """
        if self._function is not None:
            fn = self._function
            text = repr(
                [self.name, getattr(fn, "__module__", None), getattr(fn, "__qualname__", None),
                 getattr(fn, "__doc__", None), _raw_annotations(fn),
                 getattr(fn, "__defaults__", None), getattr(fn, "__kwdefaults__", None)]
            )  # fmt: skip
        else:
            text = repr(
                [self.name, [(p.name, _hint_name(p.hint), repr(p.default), p.description)
                             for p in self.parameters]]
            )  # fmt: skip
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def hint_classes(self) -> list[type]:
        """The classes the parameters' type hints name (their files key the start-up cache).

        Read from the raw annotations when they are objects; postponed (string)
        annotations are resolved first, which reads the signature.
        """
        annotations = _raw_annotations(self._function) if self._function is not None else None
        if annotations is not None and not any(isinstance(a, str) for a in annotations.values()):
            return _classes(annotations.values())
        return _classes(p.hint for p in self.parameters)

    def _build_schema(self) -> dict[str, Any]:
        fast = _simple_object_schema(self.parameters)
        if fast is not None:
            return fast
        model = self._model if self._model is not None else self._build_model()
        self._model = model
        try:
            schema = _strip_titles(model.model_json_schema())
        except PydanticUserError as error:
            raise self._fail(error) from None
        schema.setdefault("properties", {})
        return cast(dict[str, Any], schema)

    def _build_model(self) -> type[BaseModel]:
        if self._error is not None:
            raise self._error
        fields: dict[str, Any] = {
            p.name: (p.hint, Field(p.default, description=p.description)) for p in self.parameters
        }
        try:
            return create_model(
                f"{self.name}_arguments",
                __config__=ConfigDict(extra="forbid"),
                **fields,
            )
        except PydanticUserError as error:
            raise self._fail(error) from None

    def _fail(self, error: PydanticUserError) -> ToolDefinitionError:
        """The error naming the parameter pydantic cannot describe (kept: never rebuilt)."""
        culprit = next((p for p in self.parameters if not _describable(p.hint)), None)
        what = (
            f"parameter {culprit.name!r} has type {_hint_name(culprit.hint)}, which"
            if culprit
            else "a parameter type"
        )
        self._error = ToolDefinitionError(
            f"{self.where}: {what} pydantic cannot turn into a JSON schema "
            f"({type(error).__name__}): use str, int, float, bool, a list or dict of them, "
            "a Literal, an Enum or a pydantic model"
        )
        return self._error


@dataclass(frozen=True, eq=False, init=False)
class Tool:
    """A function the model may call, with its name, description and JSON schema.

    Make one with :func:`tool`; the core binds every tool when the oracle is built. Tools
    compare by identity. The JSON schema and the argument model are built on first need
    (see :meth:`prepare`), so decorating a function stays cheap.

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
    """

    name: str
    description: str
    function: Callable[..., Any]
    visibility: Visibility | None = None
    timeout: float | None = None
    connections: tuple[str, ...] = ()
    approval: bool | ApprovalPredicate | None = None
    background: bool = False
    _arguments: _Arguments = field(default=None, repr=False)  # type: ignore[assignment]

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
        _arguments: _Arguments | None = None,
    ) -> None:
        """A tool from a ready JSON schema (``parameters``) and optional argument model.

        :func:`tool` is the usual way to make one; it passes ``_arguments`` (the lazily
        built schema) instead of ``parameters``, which ``dataclasses.replace`` keeps.
        Without ``args_model`` the tool accepts any arguments and passes none on.
        """
        if function is None:
            raise TypeError(f"tool {name!r}: give the function it calls")
        if parameters is not None:  # a ready schema wins (also over replace()'s copy)
            _arguments = _Arguments(
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
    connections: Sequence[str] = (),
    approval: bool | ApprovalPredicate | None = None,
    background: bool = False,
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
    once while the work goes on (docs/waits.md).

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
    text = (description or _summary(inspect.getdoc(fn) or "")).strip()
    if not text:
        raise ToolDefinitionError(
            f"{where}: has no description: add a docstring or pass @tool(description=...)"
        )
    # The signature, type hints and argument docs are read on first need (see _Arguments),
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
        _arguments=_Arguments(tool_name, where, function=fn),
    )


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


def _read_signature(
    fn: Callable[..., Any], where: str
) -> tuple[tuple[_Parameter, ...], str | None]:
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
    parameters: list[_Parameter] = []
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
        parameters.append(_Parameter(parameter.name, hint, default, arg_docs.get(parameter.name)))
    return tuple(parameters), context_parameter


def _raw_annotations(fn: Callable[..., Any]) -> dict[str, Any] | None:
    """A plain function's annotations as written (strings when postponed), else ``None``."""
    if not isinstance(fn, types.FunctionType):
        return None
    annotations = fn.__annotations__
    return annotations if isinstance(annotations, dict) else None


def _classes(hints: Iterable[Any]) -> list[type]:
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


def _given_model(arguments: _Arguments | None) -> type[BaseModel] | None:
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


def prime_schema(tool: Tool, parameters: Callable[[], Any]) -> None:
    """Give ``tool`` its JSON schema from the start-up cache instead of building it.

    Only for a schema that was built for a tool with the same :func:`tool_fingerprint`
    from unchanged files; a schema already known is kept. ``parameters`` is called when
    the schema is first needed (a warm start reads no schema it does not show).
    """
    tool._arguments.prime(parameters)


def _hint_name(hint: Any) -> str:
    """A type hint as it reads in code (``list[str] | None``, ``mymodule.Point``)."""
    if isinstance(hint, type) and not typing.get_args(hint):
        return (
            f"{hint.__module__}.{hint.__qualname__}"
            if hint.__module__ != "builtins"
            else hint.__qualname__
        )
    return repr(hint)


def _describable(hint: Any) -> bool:
    """Whether pydantic can validate ``hint`` and describe it as JSON Schema."""
    try:
        TypeAdapter(hint).json_schema()
    except PydanticUserError:
        return False
    return True


_SIMPLE_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _simple_schema(hint: Any) -> dict[str, Any] | None:
    """The JSON schema pydantic writes for a simple ``hint``; ``None`` for any other type.

    Simple: ``str``, ``int``, ``float``, ``bool``, ``list[X]``, ``dict[str, X]`` of simple
    ``X``, and ``X | None``. Keys sorted, as pydantic writes them (tests compare the two).
    """
    if hint in _SIMPLE_TYPES:
        return {"type": _SIMPLE_TYPES[hint]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list and len(args) == 1:
        items = _simple_schema(args[0])
        return None if items is None else {"items": items, "type": "array"}
    if origin is dict and len(args) == 2 and args[0] is str:
        values = _simple_schema(args[1])
        return None if values is None else {"additionalProperties": values, "type": "object"}
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        other = _simple_schema(next(a for a in args if a is not type(None)))
        if other is None:
            return None
        return {"anyOf": [other, {"type": "null"}]}  # pydantic puts null last, either way
    return None


def _simple_object_schema(parameters: Sequence[_Parameter]) -> dict[str, Any] | None:
    """The whole arguments schema when every parameter is simple (else ``None``)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in parameters:
        schema = _simple_schema(parameter.hint)
        default = parameter.default
        if schema is None or not _plain_default(default):
            return None
        if default is ...:
            required.append(parameter.name)
        else:
            schema["default"] = default
        if parameter.description is not None:
            schema["description"] = parameter.description
        properties[parameter.name] = dict(sorted(schema.items()))
    result: dict[str, Any] = {"additionalProperties": False, "properties": properties}
    if required:
        result["required"] = required
    result["type"] = "object"
    return result


def _plain_default(value: Any) -> bool:
    """Whether pydantic writes ``value`` into the schema as it is (``...``: no default)."""
    if value is ... or value is None or type(value) in (str, int, bool):
        return True
    return type(value) is float and math.isfinite(value)


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


def _summary(doc: str) -> str:
    """The description part of a docstring: everything before its first section header.

    A line scan over docstring_parser's section titles rather than a full parse: every
    ``@tool`` reads its description at import, where a parse costs about eight times more.
    """
    lines = doc.splitlines()
    for index, line in enumerate(lines):
        # Most lines hold no colon: the substring test spares them the regex.
        if ":" in line and not line.startswith((" ", "\t")) and _SECTION.match(line.strip()):
            return "\n".join(lines[:index]).strip()
    return doc.strip()


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and ``Args:`` descriptions.

    Parsed by ``docstring_parser``; an argument's description is one line (its wrapped
    lines joined by spaces). A section it cannot parse gives no argument descriptions
    rather than an error: they are help for the model, never required.
    """
    notes = [google.Section(t, "note", google.SectionType.SINGULAR) for t in ("Note", "Notes")]
    try:
        parsed = google.GoogleParser([*google.DEFAULT_SECTIONS, *notes]).parse(doc)
    except ParseError:
        return _summary(doc), {}
    args = {
        param.arg_name: " ".join((param.description or "").split())
        for param in parsed.params
        # Args/Arguments/Parameters/Params, not Attributes; and a name, not a broken line.
        if param.args[0] == "param" and param.arg_name.isidentifier()
    }
    return _summary(doc), args


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
