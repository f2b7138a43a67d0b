"""A model's bad text is cleaned where its reply enters the run, so every event is valid.

Lone surrogates (which JSON decoders make from ``\\ud83d`` escapes and some providers
send) cannot be encoded as UTF-8: an answer or event built from one breaks every surface
that encodes it (HTTP, SSE, MCP). Seeded over a class of bad strings, placed in the answer,
the streamed text, a tool call's name and its arguments.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from waits_support import Kit, build_oracle

from oracle_core import Model, ModelRequest, ModelResponse, tool
from oracle_core.models.base import assistant_message, tool_call

BAD = ["\ud83d", "\ude00", "\ude00\ud83d", "a\ud800b", "\udfff" * 3, "x\ud83d\ude00y"]
"""Lone high and low surrogates, a reversed pair, and a valid pair written as two units."""


def hostile(rng: random.Random) -> str:
    """Ordinary text with bad code units spliced in, ending with a lone one."""
    parts = ["Hello", " world", "\x00", "é", "\u202e", "\ufffe"]
    spliced = "".join(rng.choice(parts + BAD) for _ in range(rng.randint(1, 8)))
    return spliced + "|" + rng.choice(BAD[:5])


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


class HostileModel(Model):
    """Calls ``echo`` (and a tool with a bad name) with bad text, then answers bad text."""

    name = "hostile"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.step == 1:
            calls = [
                tool_call("echo", json.dumps({"text": hostile(self.rng)}), "call_0"),
                tool_call("echo" + hostile(self.rng), "{}", "call_1"),
            ]
            return ModelResponse(assistant_message(hostile(self.rng), calls))
        return ModelResponse(assistant_message(hostile(self.rng), None))

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        response = await self.complete(request)
        for piece in (hostile(self.rng), hostile(self.rng)):
            yield piece
        yield response


def strict(value: Any) -> str:
    """``value`` as JSON encoded as strict UTF-8 (raises on a lone surrogate)."""
    text = json.dumps(value, ensure_ascii=False)
    text.encode("utf-8")
    return text


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_every_event_and_the_answer_of_a_model_sending_lone_surrogates_are_valid_text(
    db: Path, seed: int, streamed: bool
) -> None:
    async with build_oracle(db, Kit(echo), model=HostileModel(seed)) as oracle:
        events = [e async for e in oracle.stream("t", "go", text_deltas=streamed)]
        saved = await oracle.checkpointer.load("t")

    finished = events[-1].to_json()
    assert finished["status"] == "completed", finished
    for event in events:
        strict(event.to_json())
    strict(list(saved.messages))
    assert "\ufffd" in finished["answer"]
    if streamed:
        assert any(e.to_json()["type"] == "text_delta" for e in events)
