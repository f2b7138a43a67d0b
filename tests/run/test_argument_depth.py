"""Tool arguments nested deeply get an error naming the depth bound, at any depth (issue 38,
hole 8): never "the call failed inside the oracle", and the tool is never entered.

Seeded variants: nesting of objects, arrays or both, the deep branch beside shallow ones,
keys with lone surrogates, depths on both sides of the bound and far past it, up to the 900
levels the attack used (where the walk recursed past Python's limit; past about 940 the model
client, litellm, itself fails to read the reply, and the run retries the model call).
"""

from __future__ import annotations

import json
import random
from typing import Any

from text_samples import reference_json

from oracle_core import PluginManifest, hookimpl, tool
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.text import MAX_JSON_DEPTH

SEED = 38
BOUND_ERROR = f"nest deeper than {MAX_JSON_DEPTH} levels"


def nested(rng: random.Random, depth: int) -> str:
    """The JSON text of a value whose deepest container is ``depth`` deep (the outermost
    counts 1), written as text: too deep for ``json.dumps`` to write."""
    text = json.dumps(rng.choice(["leaf", 7, None, True, "\ud83d"]))
    for _ in range(depth):
        wrap = rng.choice(("object", "array", "wide"))
        key = json.dumps(rng.choice(["k", "\ude00", "é", "x" * rng.randint(1, 5)]))
        if wrap == "object":
            text = f"{{{key}: {text}}}"
        elif wrap == "array":
            text = f"[{text}]"
        else:  # the deep branch among shallow ones
            text = f'{{"a": 1, {key}: {text}, "b": "\\ud83d", "c": null}}'
    return text


def arguments_text(rng: random.Random, depth: int) -> str:
    """Arguments ``{"data": ...}`` that are ``depth`` deep in all (the outer object counts)."""
    return f'{{"data": {nested(rng, depth - 1)}}}'


class Keeper:
    """An always plugin whose tool ``keep(data)`` takes any JSON and records each call."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="keeper", summary="Keeps data.", when_to_use=["data"], visibility="always"
        )

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        calls = self.calls

        @tool
        def keep(data: Any) -> str:
            """Keep the data."""
            calls.append(data)
            return "kept"

        return [keep]


def depths(rng: random.Random) -> list[int]:
    """Depths on both sides of the bound, at it, and up to Python's recursion limit."""
    near = [MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1, MAX_JSON_DEPTH + 2]
    far = [rng.randint(MAX_JSON_DEPTH + 3, 450) for _ in range(4)]
    reported = [rng.randint(500, 900) for _ in range(12)]  # the depths the attacker used
    shallow = [rng.randint(1, MAX_JSON_DEPTH - 2) for _ in range(4)]
    return near + far + reported + shallow


async def test_arguments_past_the_depth_bound_get_an_error_naming_it_and_the_tool_never_runs(
    make_oracle: Any, fake_openai: FakeOpenAI
) -> None:
    rng = random.Random(SEED)
    keeper = Keeper()
    oracle = make_oracle(keeper)
    cases = depths(rng)
    for index, depth in enumerate(cases):
        thread = f"deep-{index}"
        fake_openai.script(Reply.call("keep", arguments_text(rng, depth)), Reply.text("done"))
        kept = len(keeper.calls)

        result = await oracle.run(thread, "keep this")

        state = await oracle.checkpointer.load(thread)
        answers = [m["content"] for m in state.messages if m.get("role") == "tool"]
        assert len(answers) == 1, f"depth {depth}: {state.messages}"
        case = f"depth {depth}: {answers[0][:200]}"
        answer = answers[0]
        assert result.status == "completed", case
        if depth > MAX_JSON_DEPTH:
            assert json.loads(answer) == {
                "error": f"the arguments of keep {BOUND_ERROR} of objects and arrays, "
                "the most a tool takes: send flatter arguments"
            }, case
            assert len(keeper.calls) == kept, case  # never entered
        else:
            assert answer == "kept", case
            assert len(keeper.calls) == kept + 1, case
    assert len(cases) == 24


async def test_a_tool_gets_arguments_at_the_bound_whole_and_cleaned(
    make_oracle: Any, fake_openai: FakeOpenAI
) -> None:
    rng = random.Random(SEED + 1)
    keeper = Keeper()
    oracle = make_oracle(keeper)
    for index in range(6):
        text = arguments_text(rng, MAX_JSON_DEPTH)
        fake_openai.script(Reply.call("keep", text), Reply.text("ok"))

        await oracle.run(f"at-bound-{index}", "keep this")

        assert keeper.calls[-1] == reference_json(json.loads(text)["data"])


async def test_a_client_calling_a_tool_over_mcp_gets_the_same_error_past_the_bound(
    make_oracle: Any,
) -> None:
    from oracle_core.server.mcp.surface import ThreadSurface

    rng = random.Random(SEED + 2)
    keeper = Keeper()
    surface = ThreadSurface(make_oracle(keeper), "mcp-deep")
    # The MCP SDK itself refuses JSON much deeper than 200 levels, before any tool is called.
    for depth in [MAX_JSON_DEPTH + 1, *(rng.randint(MAX_JSON_DEPTH + 2, 190) for _ in range(7))]:
        arguments = json.loads(arguments_text(rng, depth))

        called = await surface.call("keep", arguments)

        assert BOUND_ERROR in called.result.content, (depth, called.result.content)
    assert keeper.calls == []
