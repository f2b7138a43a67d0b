"""A tool's arguments as pydantic sees them: the argument model and JSON schema, built lazily.

``@tool`` only keeps the function; :class:`Arguments` reads its signature, builds the
model and writes the schema the first time one is needed (a request shows the tool, a call
validates, the validator checks, or the start-up cache primes it).
"""

from __future__ import annotations

import hashlib
import math
import threading
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, TypeAdapter, create_model

from oracle_core.authoring.tools.signature import (
    Parameter,
    hint_classes_of,
    hint_name,
    raw_annotations,
    read_signature,
)
from oracle_core.errors import ToolDefinitionError


class Arguments:
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
        parameters: Sequence[Parameter] = (),
        *,
        schema: dict[str, Any] | None = None,
        model: type[BaseModel] | None = None,
        context: str | None = None,
        function: Callable[..., Any] | None = None,
    ) -> None:
        self.name = name
        self.where = where
        self._parameters: tuple[Parameter, ...] | None = tuple(parameters)
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
        self._simple: bool | None = None
        self._plain = False

    @property
    def parameters(self) -> tuple[Parameter, ...]:
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
            self._parameters, self._context = read_signature(self._function, self.where)
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
        if self._simple is None:  # asked by prepare() and by the validator: read once
            self._simple = not self._given and all(
                _simple_schema(p.hint) is not None for p in self.parameters
            )
        return self._simple

    @property
    def plain(self) -> bool:
        """Whether the schema built was written from simple types (see :attr:`simple`): then
        it is plain JSON (strings, numbers, booleans, null) and holds no ``$ref``."""
        return self._plain

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

    def stored(self, schema: Callable[[], Any]) -> None:
        """The schema built has been stored where ``schema()`` reads it back: let go of the
        built one (a large catalog's schemas are then not all held at once) and read it
        back when it is next needed. A schema given ready-made is kept."""
        with self._lock:
            if not self._given and self._schema is not None:
                self._schema = None
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
                 getattr(fn, "__doc__", None), raw_annotations(fn),
                 getattr(fn, "__defaults__", None), getattr(fn, "__kwdefaults__", None)]
            )  # fmt: skip
        else:
            text = repr(
                [self.name, [(p.name, hint_name(p.hint), repr(p.default), p.description)
                             for p in self.parameters]]
            )  # fmt: skip
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def hint_classes(self) -> list[type]:
        """The classes the parameters' type hints name (their files key the start-up cache).

        Read from the raw annotations when they are objects; postponed (string)
        annotations are resolved first, which reads the signature.
        """
        annotations = raw_annotations(self._function) if self._function is not None else None
        if annotations is not None and not any(isinstance(a, str) for a in annotations.values()):
            return hint_classes_of(annotations.values())
        return hint_classes_of(p.hint for p in self.parameters)

    def _build_schema(self) -> dict[str, Any]:
        fast = _simple_object_schema(self.parameters)
        if fast is not None:
            self._plain = self._simple = True  # every parameter is simple: none asked again
            return fast
        model = self._model if self._model is not None else self._build_model()
        self._model = model
        try:
            schema = strip_titles(model.model_json_schema())
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
            f"parameter {culprit.name!r} has type {hint_name(culprit.hint)}, which"
            if culprit
            else "a parameter type"
        )
        self._error = ToolDefinitionError(
            f"{self.where}: {what} pydantic cannot turn into a JSON schema "
            f"({type(error).__name__}): use str, int, float, bool, a list or dict of them, "
            "a Literal, an Enum or a pydantic model"
        )
        return self._error


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
    kind = type(hint)
    if kind is types.GenericAlias:  # list[...], dict[...]: what typing would say, read direct
        origin, args = hint.__origin__, hint.__args__
    elif kind is types.UnionType:
        origin, args = types.UnionType, hint.__args__
    else:
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


def _simple_object_schema(parameters: Sequence[Parameter]) -> dict[str, Any] | None:
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


def strip_titles(node: Any) -> Any:
    """Drop pydantic's generated ``title`` keys: they cost the model tokens and say nothing."""
    if isinstance(node, dict):
        cleaned: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs") and isinstance(value, dict):
                cleaned[key] = {name: strip_titles(sub) for name, sub in value.items()}
            else:
                cleaned[key] = strip_titles(value)
        return cleaned
    if isinstance(node, list):
        return [strip_titles(item) for item in node]
    return node
