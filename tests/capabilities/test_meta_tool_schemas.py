"""The meta-tools' schemas: every parameter described, all within the 130-token budget."""

from __future__ import annotations

from typing import Any

import pytest

from oracle_core.capabilities.meta_tools import (
    GET_OPERATION_SCHEMA,
    META_TOOL_SCHEMAS,
    META_TOOLS,
)
from oracle_core.values.tokens import count_json_tokens

SCHEMAS = [*META_TOOL_SCHEMAS, GET_OPERATION_SCHEMA]

# What a weak model wrote into undescribed parameters: the schema's own words.
SCHEMA_WORDS = {"array", "items", "string", "integer", "boolean", "object", "type", "name1"}


def _parameters(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    function = schema["function"]
    return [
        (f"{function['name']}.{name}", spec)
        for name, spec in function["parameters"]["properties"].items()
    ]


@pytest.mark.parametrize(
    ("parameter", "spec"),
    [p for s in SCHEMAS for p in _parameters(s)],
    ids=[name for s in SCHEMAS for name, _ in _parameters(s)],
)
def test_every_meta_tool_parameter_has_a_description(parameter: str, spec: dict[str, Any]) -> None:
    description = spec.get("description")

    assert isinstance(description, str) and description.strip(), f"{parameter} has none"
    assert description.strip(". ").lower() not in SCHEMA_WORDS


def test_the_meta_tools_keep_their_names_and_parameters() -> None:
    shown = {
        s["function"]["name"]: sorted(s["function"]["parameters"]["properties"]) for s in SCHEMAS
    }

    assert shown == {
        "list_capabilities": ["category"],
        "load_capability": ["names"],
        "search_capabilities": ["queries"],
        "get_operation": ["cancel", "id"],
    }


def test_the_three_described_meta_tools_stay_within_130_tokens() -> None:
    assert count_json_tokens(list(META_TOOL_SCHEMAS)) <= 130
    assert sum(count_json_tokens(t.openai_schema()) for t in META_TOOLS) <= 130


def test_the_tools_the_model_is_shown_carry_the_descriptions() -> None:
    assert [t.openai_schema() for t in META_TOOLS] == list(META_TOOL_SCHEMAS)
