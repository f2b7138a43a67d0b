"""An output schema is checked once, when it is made, against the bounds of structured
output: size, depth, references only inside itself, patterns ``regex`` compiles. Each
class of schema past a bound is refused with an ``OutputSchemaError`` naming the place and
the fix, and nothing it refers to is fetched or read (issue 38, holes 1 and 2)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from output_cases import (
    PLANTED,
    CountingServer,
    deep_schema,
    huge_schema,
    place,
    remote_refs,
)
from pydantic import BaseModel

from oracle_core import OutputSchema, OutputSchemaError
from oracle_core.values.output_bounds import (
    MAX_PATTERN_CHARS,
    MAX_SCHEMA_CHARS,
    MAX_SCHEMA_DEPTH,
)


@pytest.fixture
def counting() -> Iterator[CountingServer]:
    server = CountingServer()
    server.start()
    yield server
    server.close()


@pytest.fixture
def planted_file(tmp_path: Path) -> str:
    path = tmp_path / "secret.json"
    path.write_text(f'{{"type": "integer", "description": "{PLANTED}"}}')
    return str(path)


def test_references_outside_the_schema_are_refused_and_never_fetched(
    counting: CountingServer, planted_file: str
) -> None:
    rng = random.Random(3801)
    cases = 0
    for _ in range(30):
        for ref in remote_refs(rng, counting.base, planted_file):
            keyword = rng.choice(["$ref", "$ref", "$dynamicRef", "$recursiveRef"])
            schema = place(rng, keyword, ref)
            with pytest.raises(OutputSchemaError) as refused:
                OutputSchema.from_schema(schema)
            message = str(refused.value)
            assert f"has {keyword} {ref!r} at $" in message, message
            assert "must point inside the schema" in message
            assert PLANTED not in message
            cases += 1
    assert cases == 330
    assert counting.requests == []  # nothing was fetched


def test_a_response_format_with_a_remote_reference_is_refused_too(
    counting: CountingServer, planted_file: str
) -> None:
    rng = random.Random(3802)
    for ref in remote_refs(rng, counting.base, planted_file):
        spec = {"name": "x", "schema": place(rng, "$ref", ref)}
        with pytest.raises(OutputSchemaError, match="must point inside the schema"):
            OutputSchema.from_response_format({"type": "json_schema", "json_schema": spec})
    assert counting.requests == []


def test_an_inner_id_is_refused_and_a_root_id_is_kept() -> None:
    schema = {"type": "object", "properties": {"a": {"$id": "http://127.0.0.1:9/a.json"}}}
    with pytest.raises(OutputSchemaError, match=r"has an \$id at \$\.properties\.a: only"):
        OutputSchema.from_schema(schema)
    rooted = {"$id": "https://example.com/person.json", "$defs": {"n": {"type": "string"}}}
    rooted["properties"] = {"name": {"$ref": "#/$defs/n"}}
    assert OutputSchema.from_schema(rooted).schema["$id"] == "https://example.com/person.json"


def test_local_references_are_kept_as_pydantic_writes_them() -> None:
    class Node(BaseModel):
        name: str
        children: list[Node] = []

    schema = Node.model_json_schema()
    assert OutputSchema.from_schema(schema).schema == schema
    escaped = {"$defs": {"a/b~c": {"type": "string"}}, "$ref": "#/$defs/a~1b~0c"}
    assert OutputSchema.from_schema(escaped).schema == escaped
    assert OutputSchema.from_schema({"anyOf": [{"type": "null"}, {"items": {"$ref": "#"}}]})


@pytest.mark.parametrize("seed", range(12))
def test_a_schema_past_the_size_bound_is_refused_naming_its_size(seed: int) -> None:
    rng = random.Random(3803 + seed)
    schema = huge_schema(rng, MAX_SCHEMA_CHARS + rng.randrange(1, 900_000))

    with pytest.raises(OutputSchemaError) as refused:
        OutputSchema.from_schema(schema)

    assert f"more than the {MAX_SCHEMA_CHARS:,} allowed: send a smaller schema" in str(
        refused.value
    )


def test_a_schema_just_under_the_size_bound_is_kept() -> None:
    schema = huge_schema(random.Random(3804), MAX_SCHEMA_CHARS - 2_000)
    assert OutputSchema.from_schema(schema).schema == schema


def test_schemas_past_the_depth_bound_are_refused_without_recursing() -> None:
    rng = random.Random(3805)
    depths = [MAX_SCHEMA_DEPTH + 1 + rng.randrange(40) for _ in range(40)] + [20_000]
    for depth in depths:
        with pytest.raises(OutputSchemaError) as refused:
            OutputSchema.from_schema(deep_schema(rng, depth))
        assert f"is nested deeper than {MAX_SCHEMA_DEPTH} objects and arrays" in str(refused.value)


def test_a_schema_at_the_depth_bound_is_checked_and_kept() -> None:
    rng = random.Random(3806)
    for _ in range(20):
        schema = deep_schema(rng, MAX_SCHEMA_DEPTH - 2)
        assert OutputSchema.from_schema(schema).schema == schema


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ({"pattern": "a" * (MAX_PATTERN_CHARS + 1)}, "more than the 1,000 allowed"),
        ({"pattern": "(("}, "is not a regular expression"),
        ({"patternProperties": {"[z-a]": {}}}, "is not a regular expression"),
        (
            {"patternProperties": {"^a": {}}, "unevaluatedProperties": False},
            "use additionalProperties",
        ),
    ],
)
def test_patterns_past_a_bound_are_refused_naming_them(where: dict[str, Any], says: str) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "object", **where}}}
    with pytest.raises(OutputSchemaError, match=r"at \$\.properties\.a") as refused:
        OutputSchema.from_schema(schema)
    assert says in str(refused.value)
