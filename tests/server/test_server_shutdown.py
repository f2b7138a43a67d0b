"""Draining on shutdown: new runs get 503, runs in progress their grace, then 503 and saved
as handed over (for another process to finish), or cancelled with resuming off."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest

OPENAI_BODY = {"model": "o", "messages": [{"role": "user", "content": "hi"}], "stream": True}


async def read_stream(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> str:
    """The whole body of a streamed POST."""
    async with client.stream("POST", path, json=body) as response:
        return "".join([chunk async for chunk in response.aiter_text()])


@pytest.fixture
def held(fake_openai: FakeOpenAI) -> Iterator[tuple[threading.Event, threading.Event]]:
    """Every model call waits until released; returns (a call arrived, release) events."""
    arrived, release = threading.Event(), threading.Event()

    def respond(request: SeenRequest) -> Reply:
        arrived.set()
        return Reply(content="Late answer.", hold=release)

    fake_openai.respond_with(respond)
    yield arrived, release
    release.set()


async def test_a_json_run_still_going_at_the_end_of_the_grace_is_handed_over(
    serve, held: tuple[threading.Event, threading.Event]
) -> None:
    arrived, _ = held
    served = await serve()
    post = asyncio.create_task(served.client.post("/threads/t/runs", json={"message": "hi"}))
    assert await asyncio.to_thread(arrived.wait, 30)

    await served.app.state.server.runs.drain(0.05)
    response = await post

    assert response.status_code == 503
    error = response.json()["error"]
    assert error["type"] == "run_handed_over" and "server is stopping" in error["message"]
    assert "GET /threads/t" in error["message"]
    assert response.headers["retry-after"] == "5"
    store = served.oracle.checkpointer
    assert [r.status for r in (await store.load("t")).runs] == ["running"]
    # Its thread's lease was given back: the next sweep of any process finds it at once.
    assert [r.thread_id for r in await store.cut_off_runs()] == ["t"]


async def test_without_resuming_a_run_still_going_at_the_end_of_the_grace_is_cancelled(
    serve, held: tuple[threading.Event, threading.Event], tmp_path
) -> None:
    from oracle_core import Settings

    arrived, _ = held
    env = {"ORACLE_HOME": str(tmp_path / "home"), "ORACLE_RESUME_RUNS": "0"}
    served = await serve(settings=Settings.from_env(env))
    post = asyncio.create_task(served.client.post("/threads/t/runs", json={"message": "hi"}))
    assert await asyncio.to_thread(arrived.wait, 30)

    await served.app.state.server.runs.drain(0.05)
    response = await post

    assert response.status_code == 503
    error = response.json()["error"]
    assert error["type"] == "run_cancelled" and "server is stopping" in error["message"]
    assert [r.status for r in (await served.oracle.checkpointer.load("t")).runs] == ["cancelled"]


async def test_a_stream_still_going_at_the_end_of_the_grace_ends_with_its_error_event(
    serve, held: tuple[threading.Event, threading.Event], parse_sse
) -> None:
    arrived, _ = held
    served = await serve()

    body = {"message": "hi", "stream": True}
    reading = asyncio.create_task(read_stream(served.client, "/threads/s/runs", body))
    assert await asyncio.to_thread(arrived.wait, 30)
    await served.app.state.server.runs.drain(0.05)
    events = parse_sse(await reading)

    assert events[0][0] == "run_started"
    assert events[-1] == (
        "error",
        {"type": "error", "error": "run_handed_over", "message": events[-1][1]["message"]},
    )
    assert "done" not in [kind for kind, _ in events]


async def test_an_openai_stream_still_going_at_the_end_of_the_grace_ends_with_an_error(
    serve, held: tuple[threading.Event, threading.Event]
) -> None:
    arrived, _ = held
    served = await serve()

    reading = asyncio.create_task(read_stream(served.client, "/v1/chat/completions", OPENAI_BODY))
    assert await asyncio.to_thread(arrived.wait, 30)
    await served.app.state.server.runs.drain(0.05)
    lines = [line for line in (await reading).splitlines() if line.startswith("data: ")]

    assert lines[-1] == "data: [DONE]"
    assert '"error"' in lines[-2] and "server is stopping" in lines[-2]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/threads/new/runs", {"message": "hi"}),
        ("/threads/new/runs", {"message": "hi", "stream": True}),
        ("/v1/chat/completions", {**OPENAI_BODY, "stream": False}),
        ("/v1/chat/completions", OPENAI_BODY),
    ],
    ids=["json run", "streamed run", "openai", "openai stream"],
)
async def test_once_the_server_is_stopping_new_runs_are_refused_with_503(
    serve, fake_openai: FakeOpenAI, path: str, body: dict[str, object]
) -> None:
    served = await serve()
    await served.app.state.server.runs.drain(0.05)

    response = await served.client.post(path, json=body)

    assert response.status_code == 503
    assert response.json()["error"]["type"] == "shutting_down"
    assert fake_openai.requests == []


async def test_a_run_that_ends_within_the_grace_is_answered_whole(
    serve, held: tuple[threading.Event, threading.Event]
) -> None:
    arrived, release = held
    served = await serve()
    post = asyncio.create_task(served.client.post("/threads/t/runs", json={"message": "hi"}))
    assert await asyncio.to_thread(arrived.wait, 30)

    drain = asyncio.create_task(served.app.state.server.runs.drain(30))
    release.set()
    response = await post
    await asyncio.wait_for(drain, 30)  # ends with the run, not at the end of the grace

    assert response.status_code == 200
    assert response.json()["status"] == "completed"
    assert response.json()["answer"] == "Late answer."
