"""The output a caller wants of a run: JSON for a schema, or any JSON object.

:class:`OutputSchema` is made from a pydantic model class, a JSON Schema, or
:meth:`OutputSchema.json_object` (any JSON object will do, OpenAI's ``json_object`` mode).
It gives the ``response_format`` a model that supports structured output is asked with; the
run checks the final answer against it (``oracle_core/run/output.py``). A schema is checked
once, when it is made: valid JSON Schema, and within the bounds of
``oracle_core/values/output_bounds.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias

from oracle_core.errors import OutputSchemaError

if TYPE_CHECKING:  # pydantic stays unimported until a model class is given
    from pydantic import BaseModel

OutputType: TypeAlias = "type[BaseModel] | Mapping[str, Any] | OutputSchema"
"""What may name a wanted output: a pydantic model class, a JSON Schema, an OutputSchema."""

_NAME = re.compile(r"[^A-Za-z0-9_-]+")  # OpenAI's rule for a json_schema name


@dataclass(frozen=True)
class OutputSchema:
    """The JSON a run's final answer must be.

    Attributes:
        schema: the JSON Schema the answer must fit (``{"type": "object"}`` for any object).
        name: the schema's name, as the model and error messages see it.
        any_object: any JSON object will do (OpenAI's ``json_object`` mode).
        strict: ask the provider for strict schema adherence (``"strict": true``), which
            OpenAI accepts only for schemas that meet its rules (every property required,
            ``additionalProperties: false``).
        model: the pydantic model class it was made from, if any: the run's
            :attr:`~oracle_core.RunResult.output` is then an instance of it.
    """

    schema: Mapping[str, Any]
    name: str = "output"
    any_object: bool = False
    strict: bool = False
    model: type[BaseModel] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Its own copy, frozen, so a caller's later change to its dict changes nothing here.
        object.__setattr__(self, "schema", MappingProxyType(json.loads(json.dumps(self.schema))))

    @classmethod
    def of(cls, wanted: OutputType) -> OutputSchema:
        """The output ``wanted`` names: a pydantic model class, a JSON Schema, or itself.

        Raises:
            OutputSchemaError: ``wanted`` is none of those, or not a valid JSON Schema.
        """
        if isinstance(wanted, OutputSchema):
            return wanted
        if isinstance(wanted, type) and hasattr(wanted, "model_json_schema"):
            return cls.from_model(wanted)
        if isinstance(wanted, Mapping):
            return cls.from_schema(wanted)
        raise OutputSchemaError(
            f"an output type is a pydantic model class or a JSON Schema (a dict), not "
            f"{type(wanted).__name__}"
        )

    @classmethod
    def from_model(cls, model: type[BaseModel], *, strict: bool = False) -> OutputSchema:
        """The output of a pydantic model class: its JSON Schema, named after the class."""
        return cls(model.model_json_schema(), _name(model.__name__), strict=strict, model=model)

    @classmethod
    def from_schema(
        cls, schema: Mapping[str, Any], *, name: str | None = None, strict: bool = False
    ) -> OutputSchema:
        """The output of a JSON Schema; named ``name``, else its ``title``, else ``output``.

        Raises:
            OutputSchemaError: ``schema`` is not a valid JSON Schema, or is past a bound of
                structured output (``values/output_bounds.py``); the message says where.
        """
        problem = schema_problem(schema)
        if problem is not None:
            raise OutputSchemaError(f"the output schema {problem}")
        title = name or schema.get("title")
        return cls(schema, _name(title if isinstance(title, str) else "output"), strict=strict)

    @classmethod
    def json_object(cls) -> OutputSchema:
        """Any JSON object will do (OpenAI's ``{"type": "json_object"}``)."""
        return cls({"type": "object"}, "json_object", any_object=True)

    @classmethod
    def from_response_format(cls, response_format: Mapping[str, Any]) -> OutputSchema | None:
        """The output an OpenAI ``response_format`` asks for; ``None`` for ``{"type": "text"}``.

        Raises:
            OutputSchemaError: an unknown type, a ``json_schema`` without a valid schema.
        """
        kind = response_format.get("type")
        if kind == "text":
            return None
        if kind == "json_object":
            return cls.json_object()
        if kind != "json_schema":
            raise OutputSchemaError(
                f"response_format type {kind!r} is not one of 'text', 'json_object', 'json_schema'"
            )
        spec = response_format.get("json_schema")
        if not isinstance(spec, Mapping) or not isinstance(spec.get("schema"), Mapping):
            raise OutputSchemaError(
                "response_format json_schema needs a 'json_schema' object with a 'schema' "
                '(for example {"name": "person", "schema": {"type": "object"}})'
            )
        name = spec.get("name")
        return cls.from_schema(
            spec["schema"],
            name=name if isinstance(name, str) else None,
            strict=bool(spec.get("strict")),
        )

    def response_format(self) -> dict[str, Any]:
        """The OpenAI ``response_format`` that asks a model for this output."""
        if self.any_object:
            return {"type": "json_object"}
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": dict(self.schema), "strict": self.strict},
        }

    def value(self, data: Any) -> Any:
        """The parsed answer as the caller wants it: an instance of :attr:`model`, else ``data``."""
        return data if self.model is None else self.model.model_validate(data)


def schema_problem(schema: object) -> str | None:
    """What keeps ``schema`` from being a valid JSON Schema within the bounds of structured
    output (``values/output_bounds.py``: size, depth, local references, patterns), or
    ``None``. Not quick for a large schema: a server calls it from a worker thread."""
    if not isinstance(schema, Mapping):
        return f"must be a JSON object (a JSON Schema), not {type(schema).__name__}"
    from oracle_core.values.output_bounds import bounds_problem

    if (problem := bounds_problem(schema)) is not None:
        return problem
    from jsonschema import SchemaError, validators  # imported on first use: it is not light

    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as error:
        where = error.json_path if error.path else "its root"
        return f"is not a valid JSON Schema: at {where}: {error.message}"
    return None


def _name(text: str) -> str:
    return _NAME.sub("_", text).strip("_")[:64] or "output"
