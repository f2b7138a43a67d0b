"""Streamed tool calls of any shape: a wrong type in any field never breaks a run.

A raw server on 127.0.0.1 streams seeded random chunks through the real model clients
(the direct path, litellm) and the real run loop. Every field of a
tool-call piece (``index``, ``id``, ``type``, ``function.name``, ``function.arguments``),
the piece itself, its ``function`` and the delta's ``tool_calls`` may hold a number, a
bool, null, a list or a dict. Whatever arrives: the run completes, every call gets one
result, and a name that was not a string never runs a tool, not even one whose name is
that value's text (``"5"``, ``"true"``, ``"null"``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from support import CodePlugin, LoopbackServer

from oracle_core import MemoryCheckpointer, Oracle, Settings
from oracle_core.authoring.tools.tool import TOOL_NAME_PATTERN
from oracle_core.models.completions import StreamAssembler
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.models.openai import OpenAIModel
from oracle_core.values.events import RunFinished

SEED = 20261223
REAL = "kit_tool"
HIDDEN = "vault_tool"
# Tools named as a wrong-typed value reads as text: a name that was not a string must not
# become one of them.
LOOKALIKES = ("5", "0", "1", "true", "false", "null", "none", "True", "None")
WRONG = (
    5, 0, 1, -1, 1.5, True, False, None, [], [1], [REAL], {}, {"name": REAL}, {"a": [None]},
)  # fmt: skip


class StreamServer(LoopbackServer):
    """Streams whatever chunks it is given, then ``[DONE]``; answers text once tools ran."""

    def __init__(self) -> None:
        self.chunks: list[Any] = []
        self.start()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else each answer waits ~40 ms for a delayed ACK
            wbufsize = 64 * 1024

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                answered = any(m.get("role") == "tool" for m in body["messages"])
                chunks = [_chunk({"content": "done"})] if answered else owner.chunks
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for item in [*chunks, _chunk({}, "stop"), "[DONE]"]:
                    text = item if isinstance(item, str) else json.dumps(item)
                    data = f"data: {text}\n\n".encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        return Handler


def _chunk(delta: Any, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fuzz",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "fuzz",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _spoil(rng: random.Random, value: Any, rate: float) -> Any:
    return rng.choice(WRONG) if rng.random() < rate else value


def _pieces(rng: random.Random, index: int) -> Iterator[Any]:
    """The streamed pieces of one call, each field wrong with some chance."""
    name = rng.choice([REAL, REAL, HIDDEN])
    arguments = json.dumps({"text": f"t{index}"})
    cut = sorted(rng.sample(range(len(arguments) + 1), 2))
    parts = [arguments[: cut[0]], arguments[cut[0] : cut[1]], arguments[cut[1] :]]
    for number, part in enumerate(parts):
        function = {"arguments": _spoil(rng, part, 0.1)}
        if number == 0 or rng.random() < 0.1:
            function["name"] = _spoil(rng, name if number == 0 else "", 0.3)
        piece: dict[str, Any] = {"index": _spoil(rng, index, 0.1), "function": function}
        if number == 0:
            piece.update(id=_spoil(rng, f"call_{index}", 0.2), type=_spoil(rng, "function", 0.2))
        if rng.random() < 0.05:
            piece["function"] = rng.choice(WRONG)
        yield rng.choice(WRONG) if rng.random() < 0.03 else piece


def _stream(rng: random.Random, spoil_lists: bool) -> list[Any]:
    chunks = [_chunk({"role": "assistant", "content": ""})]
    for index in range(rng.randrange(1, 4)):
        for piece in _pieces(rng, index):
            spoiled = spoil_lists and rng.random() < 0.02
            tool_calls = rng.choice(WRONG) if spoiled else [piece]
            chunks.append(_chunk({"tool_calls": tool_calls}))
    return chunks


@pytest.fixture
def server() -> Iterator[StreamServer]:
    served = StreamServer()
    yield served
    served.close()


# litellm reads each chunk before we see it: it drops a piece it cannot read (logging an
# error), but a delta whose ``tool_calls`` is a number fails its own stream reader, which
# the run reports as a failed model call naming the model. The direct path reads those too.
@pytest.mark.parametrize(
    ("client", "streams"), [(OpenAIModel, 300), (LiteLLMModel, 40)], ids=["direct", "litellm"]
)
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")  # litellm's own
async def test_wrong_types_in_streamed_tool_calls_never_break_a_run_or_run_a_lookalike(
    tmp_path: Path, server: StreamServer, client: type[OpenAIModel | LiteLLMModel], streams: int
) -> None:
    kit = CodePlugin("kit", visibility="always", tools=(REAL, *LOOKALIKES))
    vault = CodePlugin("vault", tools=(HIDDEN,))
    model = client("openai/fuzz", api_base=server.url, api_key="sk-fake", num_retries=0)
    oracle = Oracle(
        [kit, vault],
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}),
        model=model,
        checkpointer=MemoryCheckpointer(),
    )
    rng = random.Random(SEED)
    refused: list[str] = []
    for turn in range(streams):
        server.chunks = _stream(rng, spoil_lists=client is OpenAIModel)
        events = [event async for event in oracle.stream(f"thread-{turn % 20}", "go")]

        finished = events[-1]
        assert isinstance(finished, RunFinished) and finished.status == "completed", finished
        calls = [e for e in events if e.type == "tool_call"]
        results = [e for e in events if e.type == "tool_result"]
        assert sorted(e.id for e in calls) == sorted(e.id for e in results)
        refused += [e.name for e in results if e.refused]

    assert {name for name, _ in kit.calls} <= {REAL}, kit.calls
    assert vault.calls == []
    assert kit.calls, "no call ever ran: the fuzz tests nothing"
    if client is OpenAIModel:  # litellm drops a chunk it cannot read before we see it
        assert any(not TOOL_NAME_PATTERN.fullmatch(name) for name in refused)
    await oracle.close()


class Piece:
    """A piece as an SDK object: attributes, not keys."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


@pytest.mark.parametrize("wrong", WRONG, ids=repr)
@pytest.mark.parametrize("field", ["name", "arguments", "id", "index", "type"])
def test_the_assembler_reads_every_wrong_type_in_every_field(field: str, wrong: Any) -> None:
    fields: dict[str, Any] = {"index": 0, "id": "call_1", "type": "function"}
    function = {"name": "get_weather", "arguments": "{}"}
    (function if field in ("name", "arguments") else fields)[field] = wrong
    for shape in (dict, Piece):
        answer = StreamAssembler()
        piece = shape(**fields, function=shape(**function))
        answer.add(Piece(choices=[Piece(delta=Piece(tool_calls=[piece], content=None))]))

        (call,) = answer.response().tool_calls
        assert all(isinstance(call[key], str) for key in ("id", "type"))
        assert all(isinstance(value, str) for value in call["function"].values())
        if field == "name" and wrong is not None:
            assert not TOOL_NAME_PATTERN.fullmatch(call["function"]["name"])
            assert call["function"]["arguments"] == "{}"
