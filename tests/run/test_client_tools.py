"""The caller's own tools: offered beside the oracle's, handed back when called, continued.

An application that uses the oracle as its model brings tools it runs itself
(``RunOptions(client_tools=...)``). The model sees them under the same gate; a call of one
ends the run ``waiting_for_client`` with the call handed back; the caller's results continue
the same run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from waits_support import FunctionModel, Kit, build_oracle, calls, text

from oracle_core import (
    ClientTool,
    ClientToolError,
    ModelRequest,
    ModelResponse,
    RunOptions,
    ToolResultsError,
    tool,
)

WEATHER = ClientTool(
    "get_weather",
    "The weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def last_tool(request: ModelRequest) -> str | None:
    last = request.messages[-1]
    return str(last["content"]) if last.get("role") == "tool" else None


def weather_then_answer(request: ModelRequest) -> ModelResponse:
    """Calls the client's weather tool and ping together, then answers with the results."""
    if request.messages[-1].get("role") == "user":
        return calls(("get_weather", {"city": "Lima"}), ("ping", {}))
    tools = [m for m in request.messages if m.get("role") == "tool"]
    return text(" + ".join(str(m["content"]) for m in tools))


async def test_a_call_of_a_client_tool_is_handed_back_and_its_result_continues_the_same_run(
    db: Path,
) -> None:
    model = FunctionModel(weather_then_answer)
    options = RunOptions(client_tools=(WEATHER,))
    async with build_oracle(db, Kit(ping), model=model) as oracle:
        first = await oracle.run("t", "weather in Lima?", options=options)
        [handed] = first.client_calls
        done = await oracle.run("t", tool_results={handed["id"]: "sunny, 24 C"}, options=options)

    assert first.status == "waiting_for_client"
    assert handed["function"] == {"name": "get_weather", "arguments": '{"city": "Lima"}'}
    assert "get_weather" in model.requests[0].tool_names  # offered beside the oracle's
    assert done.run_id == first.run_id
    assert done.status == "completed", done.error
    assert done.answer == "sunny, 24 C + pong" or done.answer == "pong + sunny, 24 C"


async def test_a_client_tool_is_only_offered_to_the_run_that_brought_it(db: Path) -> None:
    model = FunctionModel(weather_then_answer)
    async with build_oracle(db, Kit(ping), model=model) as oracle:
        result = await oracle.run("t", "weather in Lima?")  # no client tools this time

    assert result.status == "completed"
    assert result.client_calls == []
    assert "get_weather" not in model.requests[0].tool_names
    assert "load_capability" in result.answer  # the gate's refusal went to the model


@pytest.mark.parametrize(
    ("tools", "says"),
    [
        ((ClientTool("ping"),), "the oracle's tool 'ping' of plugin 'kit'"),
        ((ClientTool("load_capability"),), "meta-tool"),
        ((ClientTool("bad name!"),), "a tool name is"),
        ((WEATHER, WEATHER), "given twice"),
        ((ClientTool("x", parameters={"type": "array"}),), "schema of an object"),
        ((ClientTool("x", parameters={"type": "object", "properties": 5}),), "not a valid"),
    ],
    ids=["plugin-tool", "meta-tool", "bad-name", "twice", "not-object", "bad-schema"],
)
async def test_a_client_tool_that_cannot_be_offered_is_refused_before_anything_runs(
    db: Path, tools: tuple[ClientTool, ...], says: str
) -> None:
    model = FunctionModel(weather_then_answer)
    async with build_oracle(db, Kit(ping), model=model) as oracle:
        with pytest.raises(ClientToolError, match="client tool") as caught:
            await oracle.run("t", "hi", options=RunOptions(client_tools=tools))
        state = await oracle.checkpointer.load("t")

    assert says in str(caught.value)
    assert model.requests == [] and list(state.messages) == []


@pytest.mark.parametrize(
    "results",
    [{"call_nope": "x"}, {}, {"call_0": "x", "call_9": "y"}],
    ids=["unknown-call", "nothing", "one-too-many"],
)
async def test_results_that_do_not_answer_the_open_calls_are_refused_and_nothing_is_saved(
    db: Path, results: dict[str, Any]
) -> None:
    model = FunctionModel(weather_then_answer)
    options = RunOptions(client_tools=(WEATHER,))
    async with build_oracle(db, Kit(ping), model=model) as oracle:
        await oracle.run("t", "weather?", options=options)
        before = await oracle.checkpointer.load("t")
        with pytest.raises(ToolResultsError, match="do not answer the run's open calls"):
            await oracle.run("t", tool_results=results, options=options)
        after = await oracle.checkpointer.load("t")

    assert list(after.messages) == list(before.messages)


async def test_results_on_a_thread_with_no_open_call_are_refused(db: Path) -> None:
    model = FunctionModel(lambda request: text("hello"))
    async with build_oracle(db, Kit(ping), model=model) as oracle:
        await oracle.run("t", "hi")
        with pytest.raises(ToolResultsError, match="no open tool call"):
            await oracle.run("t", tool_results={"call_0": "x"})


async def test_model_options_reach_every_model_call_of_the_run(db: Path) -> None:
    model = FunctionModel(weather_then_answer)
    options = RunOptions(model_options={"temperature": 0.2, "seed": 7})
    async with build_oracle(db, Kit(ping), model=model) as oracle:
        await oracle.run("t", "hi", options=options)

    assert [dict(r.options) for r in model.requests] == [{"temperature": 0.2, "seed": 7}] * 2


def test_a_handed_back_call_is_an_openai_tool_call_entry() -> None:
    entry = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assert json.loads(json.dumps(entry)) == entry  # the shape clients parse


async def test_a_run_continued_without_options_goes_on_with_those_it_was_given(db: Path) -> None:
    model = FunctionModel(weather_then_answer)
    options = RunOptions(client_tools=(WEATHER,), model_options={"seed": 3})
    async with build_oracle(db, Kit(ping), model=model) as oracle:
        first = await oracle.run("t", "weather in Lima?", options=options)
        [handed] = first.client_calls
        await oracle.run("t", tool_results={handed["id"]: "sunny"})

    assert "get_weather" in model.requests[-1].tool_names
    assert dict(model.requests[-1].options) == {"seed": 3}


@tool(approval=True)
def wipe(path: str) -> str:
    """Wipe a file."""
    return f"wiped {path}"


async def test_a_run_resumed_after_an_approval_keeps_its_client_tools_and_options(
    db: Path,
) -> None:
    def answer(request: ModelRequest) -> ModelResponse:
        if request.messages[-1].get("role") == "user":
            return calls(("wipe", {"path": "a.txt"}))
        return calls(("get_weather", {"city": "Lima"}))

    model = FunctionModel(answer)
    options = RunOptions(client_tools=(WEATHER,), model_options={"temperature": 0.1})
    async with build_oracle(db, Kit(wipe), model=model) as oracle:
        waiting = await oracle.run("t", "wipe a.txt, then the weather", options=options)
        resumed = await oracle.decide(waiting.operations[0].id, approve=True)

    assert waiting.status == "waiting_for_approval"
    assert resumed.status == "waiting_for_client", resumed.error
    assert [c["function"]["name"] for c in resumed.client_calls] == ["get_weather"]
    assert dict(model.requests[-1].options) == {"temperature": 0.1}
