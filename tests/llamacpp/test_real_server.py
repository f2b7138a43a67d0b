"""The oracle against a real llama.cpp server, on both client paths (``make test-llamacpp``).

Skipped unless ``ORACLE_TEST_LLAMACPP_PYTHON`` names a Python with ``llama_cpp.server`` and the
model package (tests/llamacpp/requirements.txt): the default test command never starts the
server. The server and its choices are described in tests/llamacpp/server.py; the replayed
recordings of the ordinary suite (tests/models/test_llamacpp_replay.py) come from this server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from llamacpp.record import WEATHER_TOOL, send
from llamacpp.replay import LlamaCppReplay
from llamacpp.server import PYTHON_VARIABLE, RunningServer, llama_python, llama_server

from oracle_core import ModelRequest, Oracle, RunOptions, Settings
from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools import META_TOOLS
from oracle_core.models.completions import ProviderModel
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.models.openai import OpenAIModel
from oracle_core.store import MemoryCheckpointer
from oracle_core.values.events import RunFinished
from oracle_core.values.messages import ModelResponse
from oracle_core.values.result import RunResult

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        llama_python() is None,
        reason=f"set {PYTHON_VARIABLE} to a Python with llama_cpp.server (make test-llamacpp)",
    ),
]

MODEL = "openai/gemma-3-270m"
CLIENTS = {"openai": OpenAIModel, "litellm": LiteLLMModel}
WEATHER = Tool(
    name="get_weather",
    description=WEATHER_TOOL["function"]["description"],
    parameters=WEATHER_TOOL["function"]["parameters"],
    function=lambda city: "Sunny, 21°C",
)
FORCE_WEATHER = {"type": "function", "function": {"name": "get_weather"}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    python = llama_python()
    assert python is not None
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"
    with llama_server(python, log) as running:
        yield running


@pytest.fixture(params=sorted(CLIENTS))
def make_model(
    request: pytest.FixtureRequest, server: RunningServer
) -> Callable[..., ProviderModel]:
    client = CLIENTS[request.param]

    def make(**options: Any) -> ProviderModel:
        options.setdefault("num_retries", 0)
        return client(MODEL, api_base=server.url, api_key="sk-local", **options)

    return make


def model_request(messages: tuple[dict[str, Any], ...], **options: Any) -> ModelRequest:
    tools = (*META_TOOLS, WEATHER)
    return ModelRequest("t", "r", 1, MODEL, "Answer briefly.", messages, tools, options)


ASK = {"role": "user", "content": "What is the weather in Paris?"}


async def test_a_streamed_tool_call_comes_out_whole(
    make_model: Callable[..., ProviderModel],
) -> None:
    model = make_model()
    pieces = [p async for p in model.stream(model_request((ASK,), tool_choice=FORCE_WEATHER))]
    await model.aclose()

    response = pieces[-1]
    assert isinstance(response, ModelResponse)
    [call] = response.tool_calls
    assert call["function"]["name"] == "get_weather"
    assert isinstance(json.loads(call["function"]["arguments"]), dict)
    assert call["id"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_the_call_after_a_tool_call_is_accepted(
    make_model: Callable[..., ProviderModel], stream: bool
) -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    # As the run loop keeps it: an assistant message that only calls tools has no text.
    history = (
        ASK,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21°C"},
    )
    model = make_model()
    request = model_request(history, max_tokens=32)

    if stream:
        response = [p async for p in model.stream(request)][-1]
    else:
        response = await model.complete(request)
    await model.aclose()

    assert isinstance(response, ModelResponse)


@pytest.fixture
def make_oracle(
    tmp_path: Path, make_model: Callable[..., ProviderModel]
) -> Iterator[Callable[[], Oracle]]:
    made: list[Oracle] = []

    def make() -> Oracle:
        settings = Settings.from_env({"ORACLE_HOME": str(tmp_path / "home")})
        oracle = Oracle(
            [],
            entry_points=False,
            model=make_model(),
            checkpointer=MemoryCheckpointer(),
            settings=settings,
        )
        made.append(oracle)
        return oracle

    yield make
    for oracle in made:
        asyncio.run(oracle.close())


async def streamed(oracle: Oracle, text: str, **options: Any) -> RunResult:
    events = [e async for e in oracle.stream("t", text, options=RunOptions(model_options=options))]
    assert isinstance(events[-1], RunFinished)
    return RunResult.from_events("t", events)


async def test_a_plain_question_gets_an_answer(make_oracle: Callable[[], Oracle]) -> None:
    oracle = make_oracle()

    result = await oracle.run("t", "Say hello in five words.")

    assert result.status == "completed", result.error
    assert result.answer.strip()


async def test_a_streamed_answer_counts_its_tokens(make_oracle: Callable[[], Oracle]) -> None:
    result = await streamed(make_oracle(), "Say hello in five words.", max_tokens=32)

    assert result.status == "completed", result.error
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_an_answer_cut_off_by_max_tokens_says_so(
    make_oracle: Callable[[], Oracle], stream: bool
) -> None:
    oracle = make_oracle()
    prompt = "Count from 1 to 100, one number a line."

    if stream:
        result = await streamed(oracle, prompt, max_tokens=6)
    else:
        result = await oracle.run("t", prompt, options=RunOptions(model_options={"max_tokens": 6}))

    assert result.truncated


def test_the_server_still_answers_as_the_recordings_say(server: RunningServer) -> None:
    # The replayed suite relies on these: a re-recording (RECORD=1) is due when one changes.
    recorded = LlamaCppReplay.load()
    statuses = {name: r.response.status for name, r in recorded.recordings.items()}

    now = {
        name: send(server.url, dict(r.request)).status for name, r in recorded.recordings.items()
    }

    assert now == statuses
