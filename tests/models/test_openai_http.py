"""The direct path's HTTP client reads what a server sends as the openai SDK reads it.

Every answer here is sent by a real loopback server (``FakeOpenAI`` replaying raw bytes) to
both :class:`~oracle_core.models.openai_http.ChatCompletions` and the real openai SDK
client, and the two readings are compared: error classes, messages and bodies for every
status class, and the chunks of seeded random event streams (pieces split anywhere, ``\\r\\n``
or ``\\n``, comments, fields the SDK ignores, a missing last blank line, ``[DONE]``).
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from oracle_core.models.openai_http import (
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    ChatCompletions,
)
from oracle_core.testing import FakeOpenAI, Reply
from oracle_core.testing.exchange import Exchange

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def ours(url: str, timeout: float = 10.0) -> ChatCompletions:
    return ChatCompletions(api_key="sk-test", base_url=url, timeout=timeout)


def sdk(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="sk-test", base_url=url, max_retries=0)


async def sdk_chunks(url: str) -> list[Any]:
    client = sdk(url)
    try:
        stream = await client.post(
            "/chat/completions",
            body={**BODY, "stream": True},
            cast_to=object,
            stream=True,
            stream_cls=openai.AsyncStream[object],
        )
        return [chunk async for chunk in stream]
    finally:
        await client.close()


async def our_chunks(url: str) -> list[Any]:
    client = ours(url)
    try:
        async with await client.stream({**BODY, "stream": True}) as stream:
            return [chunk async for chunk in stream]
    finally:
        await client.close()


# -- what is sent ------------------------------------------------------------------------------


def test_the_request_is_the_body_as_json_with_the_key(fake: FakeOpenAI) -> None:
    fake.script(Reply(content="Fine."))

    async def call() -> dict[str, Any]:
        client = ours(fake.url)
        try:
            return await client.create(BODY, headers={"X-Extra": "1"})
        finally:
            await client.close()

    answer = asyncio.run(call())

    assert answer["choices"][0]["message"]["content"] == "Fine."
    seen = fake.requests[0]
    assert seen.body == BODY
    assert seen.headers["authorization"] == "Bearer sk-test"
    assert seen.headers["x-extra"] == "1"


# -- errors ------------------------------------------------------------------------------------

ERROR_ANSWERS = [
    (status, body)
    for status in (400, 401, 403, 404, 409, 418, 422, 429, 500, 502, 503)
    for body in (
        json.dumps({"error": {"message": f"refused {status}", "type": "x", "code": None}}),
        json.dumps({"detail": "no error object"}),
        "plain text, not JSON",
        "",
    )
]


@pytest.mark.parametrize(("status", "body"), ERROR_ANSWERS)
def test_an_error_status_reads_as_the_sdk_reads_it(
    fake: FakeOpenAI, status: int, body: str
) -> None:
    answer = Exchange(status, {"content-type": "application/json"}, body)
    fake.script(Reply.replay(answer), Reply.replay(answer))

    async def both() -> tuple[APIStatusError, openai.APIStatusError]:
        client, theirs = ours(fake.url), sdk(fake.url)
        try:
            with pytest.raises(APIStatusError) as mine:
                await client.create(BODY)
            with pytest.raises(openai.APIStatusError) as sdks:
                await theirs.chat.completions.create(model="m", messages=BODY["messages"])  # type: ignore[arg-type]
            return mine.value, sdks.value
        finally:
            await client.close()
            await theirs.close()

    mine, theirs = asyncio.run(both())

    assert type(mine).__name__ == type(theirs).__name__
    assert (mine.status_code, mine.message, mine.body) == (
        theirs.status_code,
        theirs.message,
        theirs.body,
    )


def test_a_server_that_is_not_there_is_a_connection_error() -> None:
    with FakeOpenAI() as gone:
        url = gone.url

    async def call() -> None:
        client = ours(url)
        try:
            await client.create(BODY)
        finally:
            await client.close()

    with pytest.raises(APIConnectionError, match=r"^Connection error\.$"):
        asyncio.run(call())


def test_an_answer_later_than_the_timeout_is_a_timeout_error(fake: FakeOpenAI) -> None:
    release = threading.Event()
    fake.script(Reply(content="late", hold=release))

    async def call() -> None:
        client = ours(fake.url, timeout=0.2)
        try:
            await client.create(BODY)
        finally:
            await client.close()

    try:
        with pytest.raises(APITimeoutError, match=r"^Request timed out\.$"):
            asyncio.run(call())
    finally:
        release.set()


def test_an_answer_that_is_not_a_json_object_is_an_error(fake: FakeOpenAI) -> None:
    for body in ("<html>proxy error</html>", "[1, 2]", ""):
        fake.script(Reply.replay(Exchange(200, {"content-type": "text/html"}, body)))

    async def call() -> None:
        client = ours(fake.url)
        try:
            await client.create(BODY)
        finally:
            await client.close()

    for _ in range(3):
        with pytest.raises(APIError, match="not a JSON object"):
            asyncio.run(call())


def test_an_error_event_in_a_stream_raises_its_message(fake: FakeOpenAI) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}
    events = [
        f"data: {json.dumps(chunk)}\n\n",
        'data: {"error": {"message": "the model crashed", "code": 500}}\n\n',
    ]
    fake.script(Reply.replay(Exchange.of_events(events)))

    async def read() -> list[Any]:
        return await our_chunks(fake.url)

    with pytest.raises(APIError, match=r"^the model crashed$"):
        asyncio.run(read())


# -- streams: seeded, against the SDK --------------------------------------------------------


def random_stream(rng: random.Random) -> list[str]:
    """A stream of chat chunks as a server might send it, cut into pieces anywhere."""
    newline = rng.choice(["\n", "\r\n"])
    events = []
    for index in range(rng.randint(0, 6)):
        chunk: dict[str, Any] = {"id": "c", "choices": [{"index": 0, "delta": {}}]}
        if rng.random() < 0.7:
            chunk["choices"][0]["delta"]["content"] = rng.choice(["Hi", " ", "ü", "a\nb", ""])
        if rng.random() < 0.3:
            chunk["usage"] = {"prompt_tokens": index, "completion_tokens": 1}
        lines = [f"data: {json.dumps(chunk)}"]
        if rng.random() < 0.2:
            lines.insert(0, ": keep-alive")
        if rng.random() < 0.2:
            lines.insert(0, f"id: {index}")
        if rng.random() < 0.2:
            lines[-1] = "data:" + lines[-1][len("data: ") :]  # no space after the colon
        events.append(newline.join(lines) + newline + newline)
    if rng.random() < 0.8:
        events.append(f"data: [DONE]{newline}{newline}")
    raw = "".join(events)
    if rng.random() < 0.2:
        raw = raw.rstrip("\r\n") + newline  # the last blank line never came
    cuts = sorted(rng.sample(range(1, len(raw)), max(0, min(len(raw) - 1, rng.randint(0, 8)))))
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True) if raw[a:b]]


@pytest.mark.parametrize("seed", range(40))
def test_a_stream_gives_the_chunks_the_sdk_gives(fake: FakeOpenAI, seed: int) -> None:
    pieces = random_stream(random.Random(seed))
    fake.script(Reply.replay(Exchange.of_events(pieces)), Reply.replay(Exchange.of_events(pieces)))

    async def both() -> tuple[list[Any], list[Any]]:
        return await our_chunks(fake.url), await sdk_chunks(fake.url)

    mine, theirs = asyncio.run(both())

    assert mine == theirs
