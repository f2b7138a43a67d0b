"""The model wire: streamed replies assembled whatever a server's quirks, what is sent.

The stream assembler is fed hand-built chunks in the shapes real servers send (llama.cpp
repeats a tool's name in every piece of a streamed call, ids come late or never, usage may
be missing, a reply may stop at its output limit or mid-call) and seeded random mixes of
them. The same quirks then go over HTTP on 127.0.0.1 through both client paths (the openai
SDK directly, and litellm) into a real run.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support import ToolsPlugin
from wire_server import TEXT_BODY, Scripted, WireServer

from oracle_core import MemoryCheckpointer, ModelRequest, Oracle, Settings, tool
from oracle_core.models.completions import (
    DEFAULT_MAX_TOKENS,
    ProviderModel,
    StreamAssembler,
    response_from,
)
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.models.openai import OpenAIModel
from oracle_core.models.retries import spent_on
from oracle_core.values.events import ToolResultEvent
from oracle_core.values.messages import Usage
from oracle_core.values.result import RunResult

SEED = 20261202
MODEL = "openai/wire-model"


# -- chunks, as servers send them --------------------------------------------------------------


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with one choice."""
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}], **extra}


def piece(index: int | None = None, **fields: Any) -> dict[str, Any]:
    """One tool-call piece; ``name`` and ``arguments`` go under ``function``."""
    function = {k: fields.pop(k) for k in ("name", "arguments") if k in fields}
    found: dict[str, Any] = {**fields, "function": function}
    if index is not None:
        found["index"] = index
    return found


def calls(*pieces: dict[str, Any]) -> dict[str, Any]:
    return chunk({"tool_calls": list(pieces)})


def assemble(*chunks: Any, request: ModelRequest | None = None) -> Any:
    answer = StreamAssembler(request)
    for one in chunks:
        answer.add(one)
    return answer.response()


def request_of(*messages: dict[str, Any], **options: Any) -> ModelRequest:
    return ModelRequest(
        "thread", "run", 1, MODEL, "You are terse.", messages or USER, (ECHO,), options
    )


USER = ({"role": "user", "content": "Look it up."},)


@tool
def lookup(word: str = "") -> str:
    """Look a word up."""
    return f"found {word}"


ECHO = lookup


# -- names, arguments and ids ------------------------------------------------------------------


def test_a_name_repeated_in_every_piece_is_read_once() -> None:  # llama.cpp
    name = "search_capabilities"
    response = assemble(
        calls(piece(0, id="c1", type="function", name=name, arguments="")),
        calls(piece(0, name=name, arguments='{"queries": ')),
        calls(piece(0, name=name, arguments='["weather"]}')),
        chunk(finish="tool_calls"),
    )

    (call,) = response.tool_calls
    assert call["function"] == {"name": name, "arguments": '{"queries": ["weather"]}'}
    assert response.cut_off == ()


def test_a_name_split_over_pieces_is_joined_and_a_growing_name_is_not_doubled() -> None:
    split = assemble(calls(piece(0, id="a", name="get_")), calls(piece(0, name="weather")))
    growing = assemble(calls(piece(0, id="a", name="get_")), calls(piece(0, name="get_weather")))

    assert split.tool_calls[0]["function"]["name"] == "get_weather"
    assert growing.tool_calls[0]["function"]["name"] == "get_weather"


def test_interleaved_calls_are_joined_by_index() -> None:
    response = assemble(
        calls(piece(0, id="a", name="lookup", arguments='{"word"')),
        calls(piece(1, id="b", name="add", arguments='{"a": 1')),
        calls(piece(0, arguments=': "sun"}')),
        calls(piece(1, arguments=', "b": 2}')),
        chunk(finish="tool_calls"),
    )

    assert [(c["id"], c["function"]["arguments"]) for c in response.tool_calls] == [
        ("a", '{"word": "sun"}'),
        ("b", '{"a": 1, "b": 2}'),
    ]


def test_an_id_may_come_late_and_a_call_without_one_gets_one() -> None:
    late = assemble(calls(piece(0, name="lookup")), calls(piece(0, id="call_late", arguments="{}")))
    answer = StreamAssembler()
    answer.add(calls(piece(0, name="lookup", arguments="{}"), piece(1, name="add", arguments="{}")))

    first, second = answer.response().tool_calls
    assert late.tool_calls[0]["id"] == "call_late"
    assert first["id"].startswith("call_") and len(first["id"]) > len("call_")
    assert first["id"] != second["id"]
    assert [c["id"] for c in answer.response().tool_calls] == [first["id"], second["id"]]


def test_calls_without_an_index_are_told_apart_by_their_ids() -> None:
    response = assemble(
        calls(piece(id="a", name="lookup", arguments='{"word": "x"}')),
        calls(piece(id="b", name="lookup", arguments='{"word": "y"}')),
    )

    assert [c["function"]["arguments"] for c in response.tool_calls] == [
        '{"word": "x"}',
        '{"word": "y"}',
    ]


# -- how a reply ends --------------------------------------------------------------------------


def test_a_stream_that_ends_inside_the_arguments_cuts_that_call_off() -> None:
    response = assemble(
        calls(piece(0, id="whole", name="lookup", arguments='{"word": "a"}')),
        calls(piece(1, id="cut", name="lookup", arguments='{"word": "b')),
        chunk(finish="length"),
    )

    assert response.cut_off == ("cut",)
    assert response.truncated


def test_bad_json_the_model_finished_is_not_called_cut_off() -> None:
    response = assemble(
        calls(piece(0, id="bad", name="lookup", arguments="{word: b}")), chunk(finish="tool_calls")
    )

    assert response.cut_off == ()  # the executor tells the model its JSON is bad


def test_the_finish_reason_is_kept_streamed_and_whole() -> None:
    whole = {
        "choices": [{"message": {"content": "Half an ans"}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4},
    }

    assert assemble(chunk({"content": "Hi"}), chunk(finish="stop")).finish_reason == "stop"
    assert response_from(whole).truncated
    assert response_from(whole).usage == Usage(9, 4)


def test_missing_usage_is_estimated_and_marked() -> None:
    request = request_of()
    reported = assemble(chunk({"content": "Hi"}), {"choices": [], "usage": {"prompt_tokens": 7}})
    missing = assemble(chunk({"content": "Hello there"}), request=request)
    zeros = assemble(
        chunk({"content": "Hello there"}),
        {"choices": [], "usage": {"prompt_tokens": 0, "completion_tokens": 0}},
        request=request,
    )

    assert reported.usage == Usage(7, 0) and not reported.usage.estimated
    assert missing.usage.estimated and missing.usage.prompt_tokens > 10
    assert missing.usage.completion_tokens == 2  # "Hello there" in o200k_base
    assert zeros.usage == missing.usage


def test_an_estimate_stays_marked_through_sums_and_json() -> None:
    total = Usage(10, 2) + Usage(5, 1, estimated=True)

    assert total == Usage(15, 3, estimated=True)
    assert total.as_dict()["estimated"] is True
    assert "estimated" not in Usage(1, 1).as_dict()  # the provider's figures, OpenAI's shape
    assert Usage.from_dict(total.as_dict()) == total
    assert Usage.from_dict({"prompt_tokens": 3, "completion_tokens": 1}) == Usage(3, 1)


# -- seeded fuzz -------------------------------------------------------------------------------

NAMES = ("lookup", "get_weather", "search_capabilities", "a", "load_capability")
GARBAGE: tuple[Any, ...] = (
    None,
    {},
    {"choices": []},
    {"choices": None},
    {"choices": [None]},
    {"choices": [{"delta": None}]},
    {"choices": [{"delta": {"content": None, "tool_calls": None}}]},
    {"choices": [{"delta": {"tool_calls": []}}]},
    "data",
    42,
)


@dataclass
class Planned:
    """A call the fuzz streams, and how."""

    index: int
    id: str | None
    name: str
    arguments: str
    pieces: list[dict[str, Any]] = field(default_factory=list)


def _plan(rng: random.Random, index: int) -> Planned:
    arguments = json.dumps({"word": "".join(rng.choices("abc xyz", k=rng.randint(0, 12)))})
    call_id = rng.choice([f"call_{index}_{rng.randrange(10**6)}", None])
    planned = Planned(index, call_id, rng.choice(NAMES), arguments)
    cuts = sorted(rng.sample(range(len(arguments) + 1), k=rng.randint(0, 4)))
    parts = [arguments[a:b] for a, b in zip([0, *cuts], [*cuts, len(arguments)], strict=True)]
    repeat_name = rng.random() < 0.5  # llama.cpp: the name in every piece
    id_at = rng.randrange(len(parts)) if call_id else None  # the id may come late
    for number, part in enumerate(parts):
        fields: dict[str, Any] = {"arguments": part}
        if number == 0 or repeat_name:
            fields["name"] = planned.name
        if number == id_at:
            fields["id"] = call_id
        planned.pieces.append(piece(index, **fields))
    return planned


JUNK_PIECES: tuple[Any, ...] = (None, 5, "x", [], {"type": "function"})


def _stream(rng: random.Random, planned: list[Planned]) -> list[Any]:
    queues = [list(p.pieces) for p in planned]
    chunks: list[Any] = []
    if rng.random() < 0.5:
        chunks.append(chunk({"role": "assistant", "content": rng.choice(["", "Let me ", None])}))
    while any(queues):  # interleaved, each call's own pieces in order
        queue = rng.choice([q for q in queues if q])
        pieces = [queue.pop(0)]
        if rng.random() < 0.1:  # a piece that carries nothing, among real ones
            pieces.insert(rng.randrange(2), rng.choice(JUNK_PIECES))
        chunks.append(calls(*pieces))
        if rng.random() < 0.2:
            chunks.append(rng.choice(GARBAGE))
    chunks.append(chunk(finish="tool_calls"))
    if rng.random() < 0.5:
        chunks.append({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 5}})
    return chunks


def test_seeded_streams_of_every_quirk_assemble_into_the_calls_sent() -> None:
    rng = random.Random(SEED)
    for _ in range(500):
        planned = [_plan(rng, i) for i in range(rng.randint(1, 4))]
        request = request_of() if rng.random() < 0.5 else None

        response = assemble(*_stream(rng, planned), request=request)

        got = response.tool_calls
        assert [(c["function"]["name"], c["function"]["arguments"]) for c in got] == [
            (p.name, p.arguments) for p in planned
        ]
        ids = [c["id"] for c in got]
        assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == len(ids)
        assert [i for i, p in zip(ids, planned, strict=True) if p.id] == [
            p.id for p in planned if p.id
        ]
        assert response.cut_off == () and response.finish_reason == "tool_calls"
        assert response.usage.total_tokens > 0 or request is None


def test_seeded_streams_cut_at_any_chunk_never_raise_and_say_what_was_cut() -> None:
    rng = random.Random(SEED + 1)
    for _ in range(500):
        planned = [_plan(rng, i) for i in range(rng.randint(1, 3))]
        chunks = _stream(rng, planned)
        kept = chunks[: rng.randrange(len(chunks))]  # no finish reason: the stream just ended

        response = assemble(*kept)

        for call in response.tool_calls:
            assert all(isinstance(call[k], str) for k in ("id", "type"))
            arguments = call["function"]["arguments"]
            try:
                whole = bool(arguments.strip()) and json.loads(arguments) is not None
            except ValueError:
                whole = False
            assert (call["id"] in response.cut_off) == (bool(arguments.strip()) and not whole)


# -- over HTTP: both client paths --------------------------------------------------------------


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer()
    yield server
    server.close()


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ProviderModel, "retry_delay", 0.001)


CLIENTS = [OpenAIModel, LiteLLMModel]


def oracle_on(model: ProviderModel, tmp_path: Path) -> Oracle:
    return Oracle(
        [ToolsPlugin(ECHO)],
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}),
        model=model,
        checkpointer=MemoryCheckpointer(),
    )


async def streamed(oracle: Oracle, thread: str, text: str) -> RunResult:
    """The result of a run whose model answers are streamed (``oracle.run`` asks whole)."""
    return RunResult.from_events(thread, [e async for e in oracle.stream(thread, text)])


LLAMA_CPP_CALL = [  # a streamed call as llama.cpp sends it: the name in every piece, no usage
    chunk({"role": "assistant", "content": None}),
    calls(piece(0, id="llama1", type="function", name="lookup", arguments="")),
    calls(piece(0, name="lookup", arguments='{"word":')),
    calls(piece(0, name="lookup", arguments=' "sun"}')),
    chunk(finish="tool_calls"),
]


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__name__)
async def test_a_llama_cpp_stream_runs_the_tool_and_sends_content_on_the_way_back(
    wire: WireServer, tmp_path: Path, client: type[ProviderModel]
) -> None:
    wire.script = [
        Scripted(chunks=LLAMA_CPP_CALL),
        Scripted(chunks=[chunk({"content": "Sun."}, "stop")]),
    ]
    oracle = oracle_on(client(MODEL, api_base=wire.url, api_key="sk-fake"), tmp_path)

    result = await streamed(oracle, "t", "Look up sun.")
    await oracle.close()

    assert result.status == "completed", result.error
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("lookup", '{"word": "sun"}')]
    (tool_message,) = [e for e in result.events if isinstance(e, ToolResultEvent)]
    assert tool_message.content == "found sun"
    sent = [m for m in wire.bodies[1]["messages"] if m["role"] == "assistant"]
    assert sent[0]["content"] == "" and sent[0]["tool_calls"][0]["function"]["name"] == "lookup"
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0  # none sent
    assert result.usage.estimated


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__name__)
async def test_a_stream_that_breaks_mid_call_tells_the_model_and_the_run_goes_on(
    wire: WireServer, tmp_path: Path, client: type[ProviderModel]
) -> None:
    broken = [chunk({"content": ""}), calls(piece(0, id="c1", name="lookup", arguments='{"wo'))]
    wire.script = [
        Scripted(chunks=broken, hang_up=True),
        Scripted(chunks=[chunk({"content": "Sorry."}, "stop")]),
    ]
    oracle = oracle_on(client(MODEL, api_base=wire.url, api_key="sk-fake", num_retries=0), tmp_path)

    result = await streamed(oracle, "t", "Look up sun.")
    await oracle.close()

    assert result.status == "completed", result.error
    assert result.answer == "Sorry."
    (told,) = [e for e in result.events if isinstance(e, ToolResultEvent)]
    assert told.is_error and "cut off" in told.content
    assert json.loads(wire.bodies[1]["messages"][-1]["content"])["error"].startswith("the call")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__name__)
async def test_a_reply_cut_at_the_output_limit_completes_marked_truncated(
    wire: WireServer, tmp_path: Path, client: type[ProviderModel], stream: bool
) -> None:
    body = {"choices": [{"message": {"content": "The first half"}, "finish_reason": "length"}]}
    chunks = [chunk({"content": "The first half"}), chunk(finish="length")]
    wire.script = [Scripted(chunks=chunks) if stream else Scripted(body=body)]
    oracle = oracle_on(client(MODEL, api_base=wire.url, api_key="sk-fake"), tmp_path)

    result = await (
        streamed(oracle, "t", "Write a lot.") if stream else oracle.run("t", "Write a lot.")
    )
    await oracle.close()

    assert (result.status, result.answer, result.truncated) == ("completed", "The first half", True)
    assert result.to_json()["truncated"] is True
    assert wire.bodies[0]["max_tokens"] == DEFAULT_MAX_TOKENS


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__name__)
async def test_an_empty_reply_fails_the_run_saying_so(
    wire: WireServer, tmp_path: Path, client: type[ProviderModel]
) -> None:
    empty = {"choices": [{"message": {"content": ""}, "finish_reason": "stop"}]}
    wire.script = [Scripted(body=empty)]
    oracle = oracle_on(client(MODEL, api_base=wire.url, api_key="sk-fake"), tmp_path)

    result = await oracle.run("t", "Hello?")
    again = await oracle.run("t", "Hello again?")  # the thread takes the next message
    await oracle.close()

    assert result.status == "failed" and result.answer == ""
    assert "returned an empty reply (no text and no tool calls)" in str(result.error)
    assert again.status == "completed"
    assert [m["content"] for m in wire.bodies[1]["messages"] if m["role"] == "user"] == [
        "Hello again?"
    ]


# -- settings per model and per call -----------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__name__)
async def test_call_settings_are_not_sent_and_max_tokens_has_a_default(
    wire: WireServer, client: type[ProviderModel]
) -> None:
    model = client(MODEL, api_base=wire.url, api_key="sk-fake", temperature=0.1)

    await model.complete(request_of(timeout=30, num_retries=1, retry_on=["429"]))
    await model.complete(request_of(max_completion_tokens=50))
    await model.complete(request_of(max_tokens=None))

    first, second, third = wire.bodies
    assert not {"timeout", "num_retries", "retry_on"} & set(first)
    assert (first["max_tokens"], first["temperature"]) == (DEFAULT_MAX_TOKENS, 0.1)
    assert "max_tokens" not in second and second["max_completion_tokens"] == 50
    assert "max_tokens" not in third


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__name__)
async def test_a_request_chooses_its_own_retries(
    wire: WireServer, quick_retries: None, client: type[ProviderModel]
) -> None:
    model = client(MODEL, api_base=wire.url, api_key="sk-fake", num_retries=2)
    wire.script = [Scripted(status=500)] * 3

    with pytest.raises(Exception, match=r"HTTP 500"):
        await model.complete(request_of(retry_on=["429"]))
    assert len(wire.bodies) == 1  # a 500 is not in this request's retry_on
    with pytest.raises(Exception, match=r"HTTP 500"):
        await model.complete(request_of(num_retries=1))
    assert len(wire.bodies) == 3


def test_retry_on_names_a_bad_value_and_the_choices() -> None:
    with pytest.raises(ValueError, match=r"'502' is not a failure that can be retried; choose"):
        OpenAIModel(MODEL, retry_on={"timeout", "502"})


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__name__)
async def test_abandoned_attempts_count_their_estimated_prompt(
    wire: WireServer, quick_retries: None, client: type[ProviderModel]
) -> None:
    model = client(MODEL, api_base=wire.url, api_key="sk-fake", num_retries=2)
    wire.script = [Scripted(status=503), Scripted(status=429), Scripted(body=TEXT_BODY)]

    response = await model.complete(request_of())

    prompt = response.usage.prompt_tokens - 20  # the answer's own 20, plus the 503's estimate
    assert response.usage.estimated and prompt > 10
    assert response.usage.completion_tokens == 2
    wire.script = [Scripted(status=500)] * 3
    with pytest.raises(Exception) as failed:
        await model.complete(request_of())
    assert spent_on(failed.value) == Usage(3 * prompt, 0, estimated=True)


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__name__)
async def test_a_request_timeout_is_per_call_and_its_attempt_counts(
    wire: WireServer, quick_retries: None, client: type[ProviderModel]
) -> None:
    model = client(MODEL, api_base=wire.url, api_key="sk-fake", num_retries=1, timeout=60)
    wire.script = [Scripted(stall=True)]

    response = await model.complete(request_of(timeout=0.5))

    assert response.text == "Done."
    assert len(wire.bodies) == 2
    assert response.usage.estimated and response.usage.prompt_tokens > 20


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__name__)
async def test_a_run_whose_model_call_failed_still_counts_the_abandoned_attempts(
    wire: WireServer, quick_retries: None, tmp_path: Path, client: type[ProviderModel]
) -> None:
    wire.script = [Scripted(status=502)] * 3
    oracle = oracle_on(client(MODEL, api_base=wire.url, api_key="sk-fake"), tmp_path)

    result = await oracle.run("t", "Hello?")
    await oracle.close()

    assert result.status == "failed" and "(HTTP 502)" in str(result.error)
    assert result.usage.estimated and result.usage.prompt_tokens > 3 * 50
    assert result.usage.completion_tokens == 0


def test_a_tool_call_only_assistant_message_is_sent_with_empty_text_as_openai_types_allow() -> None:
    from openai.types.chat import ChatCompletionAssistantMessageParam
    from pydantic import TypeAdapter

    from oracle_core.models.wire import wire_messages

    asked = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    history = ({"role": "assistant", "content": None, "tool_calls": [asked]},)

    (_, sent) = wire_messages(request_of(*USER, *history))[1:]

    assert sent["content"] == ""
    checked = TypeAdapter(ChatCompletionAssistantMessageParam).validate_python(sent)
    assert checked["content"] == ""  # a str, as the type allows beside a list or None
