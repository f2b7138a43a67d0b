"""What a caller sees of a reply cut at the output limit, and of an empty reply.

The OpenAI-compatible endpoint of ``oracle serve`` answers a truncated run with
``finish_reason: "length"`` (streamed and whole); ``oracle ask`` prints the answer and says on
stderr that it was cut off, and an empty reply fails the ask with a message saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from wire_server import Scripted, WireServer

from oracle_core import MemoryCheckpointer, ModelRequest, ModelResponse, Oracle, Settings
from oracle_core.models.base import Model
from oracle_core.server import create_app
from oracle_core.values.messages import Usage


class OneReply(Model):
    """Answers every request with the same text and finish reason."""

    name = "one-reply"

    def __init__(self, text: str, finish_reason: str | None) -> None:
        self.text, self.finish_reason = text, finish_reason

    async def complete(self, request: ModelRequest) -> ModelResponse:
        message = {"role": "assistant", "content": self.text}
        return ModelResponse(message, Usage(12, 3), self.finish_reason)


@pytest.fixture
async def client_of(tmp_path: Path) -> AsyncIterator[Any]:
    clients: list[openai.AsyncOpenAI] = []

    async def make(model: Model) -> openai.AsyncOpenAI:
        oracle = Oracle(
            entry_points=False,
            settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}),
            model=model,
            checkpointer=MemoryCheckpointer(),
        )
        app = create_app(oracle)
        transport = httpx.ASGITransport(app=app)
        client = openai.AsyncOpenAI(
            base_url="http://127.0.0.1/v1",
            api_key="none",
            http_client=httpx.AsyncClient(transport=transport),  # type: ignore[arg-type]
            max_retries=0,
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


QUESTION = [{"role": "user", "content": "Write a lot."}]


async def test_the_chat_endpoint_says_length_for_an_answer_cut_at_the_output_limit(
    client_of: Any,
) -> None:
    client = await client_of(OneReply("The first half", "length"))

    completion = await client.chat.completions.create(model="oracle", messages=QUESTION)

    assert completion.choices[0].finish_reason == "length"
    assert completion.choices[0].message.content == "The first half"


async def test_a_streamed_chat_answer_cut_at_the_output_limit_ends_with_length(
    client_of: Any,
) -> None:
    client = await client_of(OneReply("The first half", "length"))

    stream = await client.chat.completions.create(model="oracle", messages=QUESTION, stream=True)
    chunks = [c async for c in stream]

    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert [f for f in finishes if f] == ["length"]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "The first half"
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_the_responses_endpoint_says_incomplete_for_an_answer_cut_at_the_limit(
    client_of: Any, stream: bool
) -> None:
    client = await client_of(OneReply("The first half", "length"))

    if stream:
        events = [
            e async for e in await client.responses.create(model="oracle", input="Go.", stream=True)
        ]
        assert events[-1].type == "response.incomplete"
        response = events[-1].response
    else:
        response = await client.responses.create(model="oracle", input="Go.")

    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == "The first half"


async def test_a_whole_responses_answer_is_completed(client_of: Any) -> None:
    client = await client_of(OneReply("All of it.", "stop"))

    response = await client.responses.create(model="oracle", input="Go.")

    assert (response.status, response.incomplete_details) == ("completed", None)


async def test_a_whole_answer_still_ends_with_stop(client_of: Any) -> None:
    client = await client_of(OneReply("All of it.", "stop"))

    completion = await client.chat.completions.create(model="oracle", messages=QUESTION)

    assert completion.choices[0].finish_reason == "stop"


async def test_the_chat_endpoint_reports_an_empty_reply_as_an_error(client_of: Any) -> None:
    client = await client_of(OneReply("", "stop"))

    with pytest.raises(openai.APIStatusError) as failed:
        await client.chat.completions.create(model="oracle", messages=QUESTION)

    assert "returned an empty reply" in json.dumps(failed.value.body)


# -- oracle ask --------------------------------------------------------------------------------


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer()
    yield server
    server.close()


def ask(wire: WireServer, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "OPENAI_"))}
    env.update(
        ORACLE_HOME=str(tmp_path / "home"),
        ORACLE_MODEL="openai/wire-model",
        ORACLE_API_BASE=wire.url,
        OPENAI_API_KEY="sk-fake",
    )
    return subprocess.run(
        [sys.executable, "-m", "oracle_core", "ask", "Write a lot."],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def whole(content: str, finish: str) -> Scripted:
    return Scripted(body={"choices": [{"message": {"content": content}, "finish_reason": finish}]})


@pytest.mark.slow
def test_oracle_ask_prints_a_cut_answer_and_says_it_was_cut(
    wire: WireServer, tmp_path: Path
) -> None:
    wire.script = [whole("The first half", "length")]

    done = ask(wire, tmp_path)

    assert done.returncode == 0, done.stderr
    assert done.stdout == "The first half\n"
    assert "cut off at the model's output limit (finish_reason: length)" in done.stderr
    assert "--max-tokens" in done.stderr


@pytest.mark.slow
def test_oracle_ask_fails_on_an_empty_reply_saying_so(wire: WireServer, tmp_path: Path) -> None:
    wire.script = [whole("", "stop")]

    done = ask(wire, tmp_path)

    assert done.returncode == 1
    assert done.stdout == ""
    assert "returned an empty reply (no text and no tool calls)" in done.stderr
