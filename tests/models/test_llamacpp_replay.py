"""The oracle against llama.cpp's recorded answers, on both client paths.

A real llama.cpp server's answers (tests/fixtures/llamacpp/, recorded by
tests/llamacpp/record.py) are replayed as they were sent by the fake OpenAI server on
127.0.0.1, and the same quirks are varied by seed (tests/llamacpp/quirks.py): a streamed tool
call whose name comes in every piece, an assistant tool-call message without ``content``
refused with the server's own HTTP 500, streams without usage, answers cut off by
``max_tokens``, an empty answer. ``make test-llamacpp`` runs the real server instead
(tests/llamacpp/test_real_server.py).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from conftest import MakeOracle
from llamacpp.quirks import QuirkyStream, quirky_stream
from llamacpp.replay import FIXTURES, KINDS, LlamaCppReplay, content_problem
from support import ToolsPlugin

from oracle_core import ModelRequest, Oracle, RunOptions, tool
from oracle_core.models.base import Model
from oracle_core.models.completions import ProviderModel
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.models.openai import OpenAIModel
from oracle_core.server import create_app
from oracle_core.testing.exchange import Exchange
from oracle_core.testing.openai_server import FakeOpenAI, Reply, Responder, SeenRequest
from oracle_core.values.events import RunFinished, ToolCallEvent
from oracle_core.values.messages import ModelResponse
from oracle_core.values.result import RunResult

MODEL = "openai/gemma-3-270m"
CLIENTS = {"openai": OpenAIModel, "litellm": LiteLLMModel}
SEEDS = range(40)
ASK = "What is the weather in Paris?"


@pytest.fixture(scope="module")
def recorded() -> LlamaCppReplay:
    """llama.cpp's recordings (tests/fixtures/llamacpp/)."""
    return LlamaCppReplay.load()


# -- what the recordings hold, read without the oracle ----------------------------------------


def deltas(recorded: LlamaCppReplay, kind: str) -> list[dict[str, Any]]:
    """The ``delta`` of every chunk of a recorded stream, in order."""
    return [
        choice.get("delta") or {}
        for chunk in recorded.recordings[kind].response.data()
        if isinstance(chunk, dict)
        for choice in chunk.get("choices") or []
    ]


def recorded_call(recorded: LlamaCppReplay, kind: str) -> tuple[str, str]:
    """The tool the recorded request forced, and the arguments the server sent for it."""
    recording = recorded.recordings[kind]
    name = recording.request["tool_choice"]["function"]["name"]
    if not recording.response.stream:
        [call] = recording.response.json()["choices"][0]["message"]["tool_calls"]
        return name, str(call["function"]["arguments"])
    pieces = [
        (call.get("function") or {}).get("arguments") or ""
        for delta in deltas(recorded, kind)
        for call in delta.get("tool_calls") or []
    ]
    return name, "".join(pieces)


def recorded_text(recorded: LlamaCppReplay, kind: str) -> str:
    """The text of a recorded answer, streamed or not."""
    response = recorded.recordings[kind].response
    if not response.stream:
        return str(response.json()["choices"][0]["message"]["content"] or "")
    return "".join(delta.get("content") or "" for delta in deltas(recorded, kind))


def test_every_kind_was_recorded_streamed_and_not(recorded: LlamaCppReplay) -> None:
    assert sorted(recorded.recordings) == sorted(f"{k}{s}" for k in KINDS for s in ("", "_stream"))


def test_the_recordings_hold_no_path_of_the_machine_they_were_made_on() -> None:
    for path in sorted(FIXTURES.glob("*.json")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(/home/|/Users/|/root/|/tmp/|/work/|[A-Z]:\\\\)", text), path.name


def test_llama_cpp_repeats_the_tool_name_in_every_streamed_piece(recorded: LlamaCppReplay) -> None:
    # The quirk of issue 29 the assembler must survive, as the real server sent it.
    names = [
        (call.get("function") or {}).get("name")
        for delta in deltas(recorded, "tool_call_stream")
        for call in delta.get("tool_calls") or []
    ]
    assert len(names) > 1 and set(names) == {"get_weather"}


def test_llama_cpp_refuses_an_assistant_message_without_a_string_content(
    recorded: LlamaCppReplay,
) -> None:
    statuses = {
        kind: recorded.recordings[kind].response.status
        for kind in ("missing_content", "null_content", "null_content_stream", "follow_up")
    }
    assert statuses == {
        "missing_content": 500,
        "null_content": 500,
        "null_content_stream": 500,
        "follow_up": 200,
    }
    # Streamed, a missing content is an HTTP 200 whose stream ends before any event.
    assert recorded.recordings["missing_content_stream"].response.events == ()


def test_a_recorded_exchange_reads_back_as_it_was_written(recorded: LlamaCppReplay) -> None:
    for recording in recorded.recordings.values():
        again = Exchange.from_dict(json.loads(json.dumps(recording.response.as_dict())))
        assert again == recording.response


@pytest.mark.parametrize(
    "kind", ["missing_content", "null_content", "missing_content_stream", "null_content_stream"]
)
def test_the_replay_answers_a_message_without_content_as_llama_cpp_did(
    fake_openai: FakeOpenAI, recorded: LlamaCppReplay, kind: str
) -> None:
    fake_openai.respond_with(recorded)
    recording = recorded.recordings[kind]
    sent = urllib.request.Request(
        f"{fake_openai.url}/chat/completions",
        json.dumps(recording.request).encode(),
        {"Content-Type": "application/json"},
    )

    try:
        with urllib.request.urlopen(sent, timeout=10) as answer:
            status, body = answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read().decode()

    assert (status, body) == (recording.response.status, recording.response.raw)


# -- the oracle against the replay ---------------------------------------------------------------


@pytest.fixture
def replay(fake_openai: FakeOpenAI, recorded: LlamaCppReplay) -> FakeOpenAI:
    """The fake server answering every request with llama.cpp's recorded answers."""
    fake_openai.respond_with(recorded)
    return fake_openai


@pytest.fixture(params=sorted(CLIENTS))
def make_model(request: pytest.FixtureRequest, fake_openai: FakeOpenAI) -> Callable[..., Model]:
    """Models of one client path (direct, or litellm) aimed at the fake server."""
    client = CLIENTS[request.param]

    def make(**options: Any) -> Model:
        options.setdefault("num_retries", 0)
        model: ProviderModel = client(
            MODEL, api_base=fake_openai.url, api_key="sk-local", **options
        )
        return model

    return make


class Weather:
    """An always-on ``get_weather`` tool (the one the recordings call) that counts its calls."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

        @tool(name="get_weather")
        def get_weather(city: str) -> str:
            """The current weather in a city."""
            self.calls.append({"city": city})
            return "Sunny, 21°C"

        self.plugin = ToolsPlugin(get_weather, name="weather")


async def finish(
    oracle: Oracle, text: str, *, stream: bool = True, thread: str = "t", **options: Any
) -> RunResult:
    """Run ``text`` on ``thread``: streamed (its events must end with the run's end) or whole."""
    if not stream:
        return await oracle.run(thread, text, **options)
    seen = [event async for event in oracle.stream(thread, text, **options)]
    assert isinstance(seen[-1], RunFinished)
    return RunResult.from_events(thread, seen)


def call_then(recorded: LlamaCppReplay, then: Responder) -> Responder:
    """llama.cpp's recorded tool call (streamed or not, as asked), then ``then`` once the
    request carries the tool's result; a message without content is refused as llama.cpp does.

    The oracle names no tool in ``tool_choice``, so the real server would not have called one:
    the recorded call (made with ``tool_choice``) stands in for a model that does.
    """

    def answer(request: SeenRequest) -> Reply:
        if any(m.get("role") == "tool" for m in request.messages):
            return then(request)
        kind = "tool_call_stream" if request.stream else "tool_call"
        return Reply.replay(recorded.recordings[kind].response)

    return recorded.refusing(answer)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_llama_cpp_tool_call_runs_once_and_the_next_call_is_accepted(
    fake_openai: FakeOpenAI,
    recorded: LlamaCppReplay,
    make_oracle: MakeOracle,
    make_model: Callable[..., Model],
    stream: bool,
) -> None:
    fake_openai.respond_with(call_then(recorded, lambda request: Reply.text("Sunny in Paris.")))
    weather = Weather()
    oracle = make_oracle(weather.plugin, model=make_model())
    name, arguments = recorded_call(recorded, "tool_call_stream" if stream else "tool_call")

    result = await finish(oracle, ASK, stream=stream)

    assert result.status == "completed", result.error
    assert result.answer == "Sunny in Paris."
    assert [e.name for e in result.events if isinstance(e, ToolCallEvent)] == [name]
    assert weather.calls == [json.loads(arguments)]
    assert len(fake_openai.requests) == 2  # nothing refused, nothing retried
    assert content_problem(fake_openai.requests[1].messages) is None


async def test_oracle_serve_streams_the_answer_after_a_streamed_llama_cpp_tool_call(
    fake_openai: FakeOpenAI,
    recorded: LlamaCppReplay,
    make_oracle: MakeOracle,
    make_model: Callable[..., Model],
) -> None:
    fake_openai.respond_with(call_then(recorded, lambda request: Reply.text("Sunny in Paris.")))
    weather = Weather()
    app = create_app(make_oracle(weather.plugin, model=make_model()), tokens=("s3cret",))
    transport = httpx.ASGITransport(app=app)

    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport) as http,
    ):
        client = openai.AsyncOpenAI(
            base_url="http://127.0.0.1/v1",
            api_key="s3cret",
            http_client=http,  # type: ignore[arg-type]  # the SDK types its own httpx copy
            max_retries=0,
        )
        stream = await client.chat.completions.create(
            model="oracle", messages=[{"role": "user", "content": ASK}], stream=True
        )
        chunks = [chunk async for chunk in stream]

    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "Sunny in Paris."
    )
    assert weather.calls == [json.loads(recorded_call(recorded, "tool_call_stream")[1])]
    assert all(r.stream for r in fake_openai.requests)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_llama_cpp_s_empty_answer_after_a_tool_call_is_an_empty_reply(
    replay: FakeOpenAI,
    recorded: LlamaCppReplay,
    make_oracle: MakeOracle,
    make_model: Callable[..., Model],
    stream: bool,
) -> None:
    # Gemma 3 270M under chatml-function-calling answers a tool result with nothing.
    assert recorded_text(recorded, "follow_up_stream" if stream else "follow_up") == ""
    replay.respond_with(call_then(recorded, recorded))
    weather = Weather()
    oracle = make_oracle(weather.plugin, model=make_model())

    result = await finish(oracle, ASK, stream=stream)

    assert len(weather.calls) == 1
    assert len(replay.requests) == 2  # the follow-up was accepted, not refused and retried
    assert result.status == "failed"
    assert "empty reply" in (result.error or "")


async def test_a_stream_without_usage_is_counted_as_an_estimate(
    replay: FakeOpenAI,
    recorded: LlamaCppReplay,
    make_oracle: MakeOracle,
    make_model: Callable[..., Model],
) -> None:
    response = recorded.recordings["text_stream"].response
    assert not any(isinstance(c, dict) and c.get("usage") for c in response.data())
    oracle = make_oracle(model=make_model())

    result = await finish(oracle, "Say hello in five words.")

    assert result.status == "completed", result.error
    assert result.answer == recorded_text(recorded, "text_stream")
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    assert result.usage.estimated


async def test_a_whole_answer_reports_the_server_s_usage(
    replay: FakeOpenAI,
    recorded: LlamaCppReplay,
    make_oracle: MakeOracle,
    make_model: Callable[..., Model],
) -> None:
    usage = recorded.recordings["text"].response.json()["usage"]
    oracle = make_oracle(model=make_model())

    result = await oracle.run("t", "Say hello in five words.")

    assert result.status == "completed", result.error
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    assert not result.usage.estimated


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_an_answer_cut_off_by_max_tokens_says_so(
    replay: FakeOpenAI,
    recorded: LlamaCppReplay,
    make_oracle: MakeOracle,
    make_model: Callable[..., Model],
    stream: bool,
) -> None:
    oracle = make_oracle(model=make_model())
    limit = recorded.recordings["length"].request["max_tokens"]
    options = RunOptions(model_options={"max_tokens": limit})

    result = await finish(oracle, "Count to 100.", stream=stream, options=options)

    assert replay.requests[0].body["max_tokens"] == limit
    assert result.answer == recorded_text(recorded, "length_stream" if stream else "length")
    assert result.truncated


# -- the same quirks, varied by seed ---------------------------------------------------------------

CALLS = (("get_weather", {"city": "Paris"}), ("search_capabilities", {"queries": ["currency"]}))
REQUEST = ModelRequest(
    "t", "r", 1, MODEL, "Answer briefly.", ({"role": "user", "content": ASK},), ()
)


def variation(seed: int) -> QuirkyStream:
    """The stream of ``seed``: one call for even seeds, two for odd ones."""
    return quirky_stream(CALLS[: 1 + seed % 2], seed)


async def assembled(model: Model, request: ModelRequest = REQUEST) -> ModelResponse:
    pieces = [piece async for piece in model.stream(request)]
    assert isinstance(pieces[-1], ModelResponse)
    return pieces[-1]


def problems(stream: QuirkyStream, response: ModelResponse) -> list[str]:
    """How ``response`` differs from what ``stream`` sent."""
    found = []
    got = tuple((c["function"]["name"], c["function"]["arguments"]) for c in response.tool_calls)
    if got != stream.calls:
        found.append(f"calls {got} != {stream.calls}")
    if response.text != stream.text:
        found.append(f"text {response.text!r} != {stream.text!r}")
    ids = [c["id"] for c in response.tool_calls]
    if not all(ids) or len(set(ids)) != len(ids):
        found.append(f"ids not unique and non-empty: {ids}")
    sent = [(i, given) for i, given in enumerate(stream.ids) if given is not None]
    if any(i >= len(ids) or ids[i] != given for i, given in sent):
        found.append(f"ids {ids} lost those sent: {stream.ids}")
    return found


async def test_every_seeded_variation_assembles_to_the_calls_sent(
    fake_openai: FakeOpenAI, make_model: Callable[..., Model]
) -> None:
    model = make_model()
    failures = {}
    for seed in SEEDS:
        stream = variation(seed)
        fake_openai.script(Reply.replay(stream.exchange))
        found = problems(stream, await assembled(model))
        if found:
            failures[seed] = (stream.quirks, found)
    assert failures == {}


async def test_seeded_variations_report_the_usage_sent_or_an_estimate(
    fake_openai: FakeOpenAI, make_model: Callable[..., Model]
) -> None:
    model = make_model()
    for seed in range(12):
        stream = variation(seed)
        fake_openai.script(Reply.replay(stream.exchange))

        usage = (await assembled(model)).usage

        if stream.usage is None:
            assert usage.estimated and usage.prompt_tokens > 0, stream.quirks
        else:
            assert (usage.prompt_tokens, usage.completion_tokens) == stream.usage, stream.quirks
            assert not usage.estimated


async def test_seeded_variations_run_each_call_once_through_the_oracle(
    fake_openai: FakeOpenAI,
    recorded: LlamaCppReplay,
    make_oracle: MakeOracle,
    make_model: Callable[..., Model],
) -> None:
    weather = Weather()
    oracle = make_oracle(weather.plugin, model=make_model())
    seeds = [s for s in SEEDS if s % 2 == 0][:4]  # one get_weather call each
    for seed in seeds:
        stream = variation(seed)
        fake_openai.script(Reply.replay(stream.exchange))
        fake_openai.respond_with(recorded.refusing(lambda request: Reply.text("Sunny.")))

        result = await finish(oracle, ASK, thread=f"t{seed}")

        assert result.status == "completed", (result.error, stream.quirks)
    assert weather.calls == [{"city": "Paris"}] * len(seeds)
    assert len(fake_openai.requests) == 2 * len(seeds)
