"""Which tool definitions OpenAI function calling accepts, and how refusals are worded."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import oracle_core.testing
from oracle_core import tool
from oracle_core.testing import function_schema_problems


@tool
def get_forecast(place: str, days: int = 3) -> str:
    """Get the daily forecast for a place."""
    return place


def definition(**function: Any) -> dict[str, Any]:
    base = get_forecast.openai_schema()["function"]
    return {"type": "function", "function": {**base, **function}}


def test_a_tool_made_with_the_decorator_is_accepted() -> None:
    assert function_schema_problems(get_forecast.openai_schema()) == []


@pytest.mark.parametrize("name", ["get forecast", "prévision", "x" * 65, ""])
def test_names_are_letters_digits_underscores_and_dashes_up_to_64(name: str) -> None:
    assert function_schema_problems(definition(name=name)) == [
        f"name {name!r} is not accepted: use 1 to 64 letters, digits, '_' or '-'"
    ]


def test_descriptions_are_capped_at_1024_characters() -> None:
    assert function_schema_problems(definition(description="x" * 1024)) == []
    assert function_schema_problems(definition(description="x" * 1025)) == [
        "description is 1025 characters; OpenAI accepts at most 1024: shorten the docstring"
    ]


@pytest.mark.parametrize(
    ("parameters", "problem"),
    [
        (
            {"type": "object", "properties": {}, "oneOf": [{"required": ["a"]}]},
            "parameters has 'oneOf' at the top level, which OpenAI refuses: make the top level "
            "one object and put alternatives inside a property",
        ),
        (
            {"type": "array", "items": {"type": "string"}, "properties": {}},
            "parameters type is 'array'; it must be \"object\" (one object whose properties "
            "are the arguments)",
        ),
        (
            {"type": "object"},
            "parameters has no 'properties' object: list the arguments there",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
            "parameters.required names ['b'], which are not properties",
        ),
        (
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/Place"}}},
            "parameters.properties.a.$ref '#/$defs/Place' points nowhere inside the schema",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "text"}}},
            "parameters.properties.a.type is not valid JSON Schema: 'text' is not valid under "
            "any of the given schemas",
        ),
    ],
)
def test_parameters_must_be_one_plain_object_schema(
    parameters: dict[str, Any], problem: str
) -> None:
    assert function_schema_problems(definition(parameters=parameters)) == [problem]


def test_a_definition_that_is_not_json_is_refused_whole() -> None:
    problems = function_schema_problems(definition(parameters={"default": float("nan")}))

    assert problems == ["definition is not JSON: Out of range float values are not JSON compliant"]


def test_every_public_helper_is_importable_and_documented() -> None:
    for name in oracle_core.testing.__all__:
        value = getattr(oracle_core.testing, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name} has no docstring"
