"""``--schema``: the JSON an answer must be, given as llm (simonw/llm) takes it.

SCHEMA is a JSON Schema inline (``'{"type": "object", ...}'``), the path of a ``.json`` file
holding one, or the concise syntax: fields separated by commas (or by newlines, so a
description may hold a comma), each ``name``, ``name type`` or ``name type: description``,
the type one of ``str`` (the default), ``int``, ``float``, ``bool``. ``'name, age int, bio:
their biography'`` is an object with those three properties, all required.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from oracle_core.errors import OutputSchemaError
from oracle_core.values.output import OutputSchema

TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
"""The concise syntax's types and the JSON Schema types they stand for."""


def concise_schema(text: str) -> dict[str, Any]:
    """The JSON Schema of an object written in the concise syntax (see the module docstring).

    Raises:
        ValueError: a field without a name, with an unknown type, or given twice.
    """
    separator = "\n" if "\n" in text else ","
    schema: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
    for spec in (part.strip() for part in text.split(separator)):
        if not spec:
            continue
        head, _, description = spec.partition(":")
        words = head.split()
        if not words or len(words) > 2:
            raise ValueError(
                f"field {spec!r}: write it as 'name', 'name type' or 'name type: description'"
            )
        name, kind = words[0], words[1] if len(words) == 2 else "str"
        if kind not in TYPES:
            raise ValueError(f"field {name!r}: the type {kind!r} is not one of {', '.join(TYPES)}")
        if name in schema["properties"]:
            raise ValueError(f"field {name!r} is given twice")
        field: dict[str, Any] = {"type": TYPES[kind]}
        if description.strip():
            field["description"] = description.strip()
        schema["properties"][name] = field
        schema["required"].append(name)
    if not schema["properties"]:
        raise ValueError("it names no field: give at least one, as 'name, age int'")
    return schema


def read_schema(text: str) -> OutputSchema:
    """The output ``--schema`` names: inline JSON, a ``.json`` file, or the concise syntax.

    Raises:
        click.BadParameter: it does not parse, the file cannot be read, or it is not a
            valid JSON Schema (the message says which and where).
    """
    try:
        return OutputSchema.from_schema(_schema(text))
    except ValueError as error:  # OutputSchemaError is one too
        detail = str(error) if isinstance(error, OutputSchemaError) else f"it {error}"
        raise click.BadParameter(detail, param_hint="--schema") from None


def _schema(text: str) -> Any:
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError as error:
            raise ValueError(f"is not valid JSON ({error})") from None
    path = Path(text).expanduser()
    if path.suffix == ".json" or path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise ValueError(
                f"names a file that cannot be read: {error.strerror}: {path}"
            ) from None
        except ValueError as error:
            raise ValueError(f"names {path}, which is not valid JSON ({error})") from None
    try:
        return concise_schema(text)
    except ValueError as error:
        raise ValueError(f"is not a schema in the concise syntax: {error}") from None
