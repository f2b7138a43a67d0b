"""A caller's own tool whose parameters are past the size or depth bound of a schema is
refused, named, before the meta-schema's check runs on them (issue 38, hole 1: a 0.9 MB
schema was checked for seconds where the run starts)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from output_cases import deep_schema, huge_schema
from waits_support import FunctionModel, build_oracle, text

from oracle_core import ClientTool, ClientToolError, RunOptions
from oracle_core.values.output_bounds import MAX_SCHEMA_CHARS, MAX_SCHEMA_DEPTH


async def test_client_tools_with_parameters_past_a_bound_are_refused_naming_it(
    db: Path,
) -> None:
    rng = random.Random(3841)
    cases = [
        (huge_schema(rng, rng.randrange(MAX_SCHEMA_CHARS, 900_000)), "characters of JSON")
        for _ in range(4)
    ]
    for _ in range(8):
        inner = deep_schema(rng, MAX_SCHEMA_DEPTH + rng.randrange(1, 3_000))
        cases.append(({"type": "object", "properties": {"a": inner}}, "nested deeper than"))
    model = FunctionModel(lambda request: text("never"))
    async with build_oracle(db, model=model) as oracle:
        for parameters, says in cases:
            tools = (ClientTool("lookup", "Look up.", parameters),)
            with pytest.raises(ClientToolError) as refused:
                await oracle.run("t", "hi", options=RunOptions(client_tools=tools))
            assert "client tool 'lookup': its parameters are" in str(refused.value)
            assert says in str(refused.value)
    assert model.requests == []
