"""Followers of a thread see its runs' events: the store's channel and the follow stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeOracle
from stores import KINDS, opener

from oracle_core.server.follow import follow_stream
from oracle_core.store import Checkpointer
from oracle_core.store.events import FOLLOWER_BACKLOG, EventChannel
from oracle_core.testing.openai_server import FakeOpenAI, Reply


@dataclass
class Note:
    type: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text}


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Checkpointer]:
    schema = request.getfixturevalue("pg_schema") if request.param == "postgres" else None
    opened = opener(request.param, tmp_path, lambda: 1_000_000.0, schema)()
    await opened.threads()
    yield opened
    await opened.close()


async def test_a_follower_gets_its_threads_events_in_order_and_no_others(
    store: Checkpointer,
) -> None:
    async with store.events.subscribe("t") as follower:
        for index in range(20):
            store.events.publish("t", Note("text_delta", str(index)))
            store.events.publish("other", Note("text_delta", "not for t"))
        got = [await asyncio.wait_for(follower.next(), 30) for _ in range(20)]

    assert got == [{"type": "text_delta", "text": str(i)} for i in range(20)]


async def test_events_published_before_subscribing_or_after_leaving_are_not_delivered() -> None:
    channel = EventChannel()
    channel.publish("t", Note("text_delta", "too early"))
    async with channel.subscribe("t") as follower:
        channel.publish("t", Note("text_delta", "seen"))
    channel.publish("t", Note("text_delta", "too late"))

    assert await follower.next() == {"type": "text_delta", "text": "seen"}
    assert not channel.following("t")


async def test_a_follower_that_falls_too_far_behind_is_cut_off() -> None:
    channel = EventChannel()
    async with channel.subscribe("t") as follower:
        for index in range(FOLLOWER_BACKLOG + 5):
            channel.publish("t", Note("text_delta", str(index)))
        got = [event async for event in follower]

    assert follower.overflowed
    assert len(got) == FOLLOWER_BACKLOG - 1  # the last place holds the end


async def test_the_follow_stream_carries_a_whole_run_after_subscribed(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle()
    fake_openai.script(Reply.text("hello there"))
    chunks: list[bytes] = []
    subscribed = asyncio.Event()

    async def follow() -> None:
        stream = follow_stream(oracle.checkpointer.events, "t", 30.0, until_done=True)
        async for chunk in stream:
            chunks.append(chunk)
            subscribed.set()

    following = asyncio.create_task(follow())
    await asyncio.wait_for(subscribed.wait(), 30)
    result = await oracle.run("t", "hi")
    await asyncio.wait_for(following, 30)

    text = b"".join(chunks).decode()
    kinds = [line[7:] for line in text.splitlines() if line.startswith("event: ")]
    assert kinds[:2] == ["subscribed", "run_started"] and kinds[-1] == "done"
    assert f'"run_id":"{result.run_id}"' in text and '"answer":"hello there"' in text
