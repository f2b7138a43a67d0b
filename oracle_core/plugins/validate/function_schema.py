"""Whether a tool's definition is one OpenAI function calling accepts.

Providers reject a whole request when one tool in it is malformed, so a bad schema in one
plugin would break every model call of an oracle that shows it. These are the rules of
OpenAI's ``tools`` format that other providers behind litellm share or are stricter than.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI accepts as a function name."""

DESCRIPTION_MAX = 1024
"""OpenAI's limit on a function description, in characters."""

TOP_LEVEL_FORBIDDEN = ("anyOf", "oneOf", "allOf", "not", "enum")
"""Keywords OpenAI refuses at the top of ``parameters``: it must be one plain object."""


def function_schema_problems(
    definition: Mapping[str, Any], *, meta_schema: bool = True, plain: bool = False
) -> list[str]:
    """Why OpenAI would refuse ``definition`` (a ``tools`` entry, as ``Tool.openai_schema()``).

    Args:
        definition: the tool definition.
        meta_schema: also validate ``parameters`` against the JSON Schema meta-schema. That
            takes milliseconds a tool, so assembly leaves it to ``check_plugin``; the other
            checks take microseconds.
        plain: ``parameters`` is known to be plain JSON without ``$ref`` (a schema written
            from simple types), and the rest of ``definition`` strings: it is not encoded
            to check that (at thousands of tools, encoding is most of this check).

    Returns:
        One message per problem, each starting with the part at fault; empty when accepted.
    """
    problems: list[str] = []
    text = ""
    if not plain:
        try:
            text = json.dumps(definition, allow_nan=False)
        except (TypeError, ValueError) as error:
            return [f"definition is not JSON: {error}"]
    if definition.get("type") != "function":
        problems.append(f'type is {definition.get("type")!r}; it must be "function"')
    function = definition.get("function")
    if not isinstance(function, Mapping):
        return [*problems, "function is missing: give the name, description and parameters"]
    name = function.get("name")
    if not isinstance(name, str) or not FUNCTION_NAME.match(name):
        problems.append(f"name {name!r} is not accepted: use 1 to 64 letters, digits, '_' or '-'")
    description = function.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append("description is empty: say what the tool does and when to use it")
    elif len(description) > DESCRIPTION_MAX:
        problems.append(
            f"description is {len(description)} characters; OpenAI accepts at most "
            f"{DESCRIPTION_MAX}: shorten the docstring"
        )
    problems += parameters_problems(
        function.get("parameters"),
        meta_schema=meta_schema,
        refs='"$ref"' in text,  # most schemas have none: no walk through every node
    )
    return problems


def parameters_problems(
    parameters: Any, *, meta_schema: bool = True, refs: bool = True
) -> list[str]:
    """Why OpenAI would refuse ``parameters`` (a function's JSON schema); empty when accepted.

    Args:
        parameters: the schema.
        meta_schema: also validate it against the JSON Schema meta-schema (milliseconds).
        refs: whether it may hold a ``$ref`` to check (``False`` only when it is known to
            hold none).
    """
    if not isinstance(parameters, Mapping):
        return [f"parameters is {type(parameters).__name__}; it must be a JSON schema object"]
    problems: list[str] = []
    if parameters.get("type") != "object":
        problems.append(
            f'parameters type is {parameters.get("type")!r}; it must be "object" (one object '
            "whose properties are the arguments)"
        )
    for keyword in TOP_LEVEL_FORBIDDEN:
        if keyword in parameters:
            problems.append(
                f"parameters has {keyword!r} at the top level, which OpenAI refuses: make the "
                "top level one object and put alternatives inside a property"
            )
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping):
        problems.append("parameters has no 'properties' object: list the arguments there")
        properties = {}
    for key, value in properties.items():
        if not isinstance(value, Mapping | bool):
            problems.append(f"parameters.properties.{key} is not a schema")
    required = parameters.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        problems.append("parameters.required must be a list of property names")
    else:
        unknown = [r for r in required if r not in properties]
        if unknown:
            problems.append(f"parameters.required names {unknown}, which are not properties")
    for where, ref in _refs(parameters, "parameters") if refs else ():
        if not _resolves(parameters, ref):
            problems.append(f"{where}.$ref {ref!r} points nowhere inside the schema")
    if meta_schema:
        problems += _meta_schema_problems(parameters)
    return problems


def _refs(node: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield where, ref
        for key, value in node.items():
            yield from _refs(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _refs(value, f"{where}[{index}]")


def _resolves(schema: Mapping[str, Any], ref: str) -> bool:
    if ref == "#":
        return True
    if not ref.startswith("#/"):
        return False  # providers do not fetch remote schemas
    node: Any = schema
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _meta_schema_problems(parameters: Mapping[str, Any]) -> list[str]:
    """Problems the JSON Schema meta-schema finds (jsonschema ships with litellm)."""
    try:
        # Imported by name: jsonschema ships no type stubs, and the check only needs Any.
        validators: Any = importlib.import_module("jsonschema.validators")
    except ImportError:  # pragma: no cover - litellm depends on jsonschema
        return []
    validator = validators.validator_for(parameters, default=validators.Draft202012Validator)
    return [
        f"parameters{''.join(f'.{p}' for p in error.absolute_path)} is not valid JSON Schema: "
        f"{error.message}"
        for error in validator(validator.META_SCHEMA).iter_errors(parameters)
    ]
