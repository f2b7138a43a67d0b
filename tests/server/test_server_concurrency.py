"""Two runs posted to one thread at once never interleave: the second is refused with 409."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest

from oracle_core.server import create_app
from oracle_core.store import MemoryCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest


def hold_first_request(
    fake: FakeOpenAI, answer: str, *then: Reply
) -> tuple[threading.Event, threading.Event]:
    """The model's first answer waits until released; returns (arrived, release) events."""
    arrived, release = threading.Event(), threading.Event()
    replies = iter([Reply(content=answer, hold=release), *then])

    def respond(request: SeenRequest) -> Reply:
        reply = next(replies)
        if reply.hold is not None:
            arrived.set()
        return reply

    fake.respond_with(respond)
    return arrived, release


async def test_a_second_post_to_a_busy_thread_is_refused_with_409_and_the_reason(
    serve, fake_openai: FakeOpenAI
) -> None:
    arrived, release = hold_first_request(fake_openai, "First answer.")
    served = await serve()
    first = asyncio.create_task(served.client.post("/threads/t/runs", json={"message": "one"}))
    assert await asyncio.to_thread(arrived.wait, 30)

    second = await served.client.post("/threads/t/runs", json={"message": "two"})
    busy = (await served.client.get("/threads/t")).json()["active_run"]
    release.set()
    done = await first

    assert second.status_code == 409
    error = second.json()["error"]
    assert error["type"] == "thread_busy"
    assert "thread 't' already has a run in progress" in error["message"]
    assert busy.startswith("run_") and busy in error["message"]
    assert done.json()["answer"] == "First answer."
    messages = (await served.client.get("/threads/t")).json()["messages"]
    assert [m.get("content") for m in messages] == ["one", "First answer."]


async def test_a_streamed_post_to_a_busy_thread_is_refused_before_any_event(
    serve, fake_openai: FakeOpenAI
) -> None:
    arrived, release = hold_first_request(fake_openai, "First.")
    served = await serve()
    first = asyncio.create_task(
        served.client.post("/threads/t/runs", json={"message": "one", "stream": True})
    )
    assert await asyncio.to_thread(arrived.wait, 30)

    second = await served.client.post("/threads/t/runs", json={"message": "two", "stream": True})
    release.set()
    await first

    assert second.status_code == 409
    assert second.headers["content-type"] == "application/json"


async def test_the_thread_takes_a_new_run_once_the_last_one_is_done(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("One."), Reply.text("Two."))
    served = await serve()

    first = await served.client.post("/threads/t/runs", json={"message": "one", "stream": True})
    second = await served.client.post("/threads/t/runs", json={"message": "two"})

    assert first.status_code == 200 and second.status_code == 200
    assert second.json()["answer"] == "Two."


async def test_runs_on_different_threads_go_on_at_the_same_time(
    serve, fake_openai: FakeOpenAI
) -> None:
    arrived, release = hold_first_request(fake_openai, "Held.", Reply.text("Free."))
    served = await serve()
    held = asyncio.create_task(served.client.post("/threads/a/runs", json={"message": "one"}))
    assert await asyncio.to_thread(arrived.wait, 30)

    other = await served.client.post("/threads/b/runs", json={"message": "two"})
    release.set()

    assert other.json()["answer"] == "Free."
    assert (await held).json()["answer"] == "Held."


class AnotherWriterFirst(MemoryCheckpointer):
    """A store where another process appends to the thread just before this one's first write."""

    def __init__(self) -> None:
        super().__init__()
        self.raced = False

    async def append(self, thread_id: str, *, base: int, messages=(), **step):  # type: ignore[no-untyped-def]
        if messages and not self.raced:
            self.raced = True
            await super().append(
                thread_id, base=base, messages=[{"role": "user", "content": "from elsewhere"}]
            )
        return await super().append(thread_id, base=base, messages=messages, **step)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_write_by_another_process_as_the_run_begins_is_kept_and_the_run_goes_on(
    serve, fake_openai: FakeOpenAI, stream: bool
) -> None:
    served = await serve(checkpointer=AnotherWriterFirst())
    fake_openai.script(Reply.text("Both seen."))

    response = await served.client.post(
        "/threads/t/runs", json={"message": "mine", "stream": stream}
    )

    assert response.status_code == 200
    thread = (await served.client.get("/threads/t")).json()
    assert [m["content"] for m in thread["messages"]] == ["from elsewhere", "mine", "Both seen."]
    assert thread["runs"][0]["status"] == "completed"


async def test_a_run_goes_on_and_is_saved_when_its_stream_client_disconnects(
    serve, fake_openai: FakeOpenAI
) -> None:
    arrived, release = hold_first_request(fake_openai, "Saved anyway.")
    served = await serve()
    body = json.dumps({"message": "hi", "stream": True}).encode()
    gone = asyncio.Event()
    received: list[bytes] = []

    async def receive() -> dict[str, object]:
        if not received:
            received.append(body)
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        if b"run_started" in message.get("body", b""):  # type: ignore[operator]
            gone.set()  # the client reads the first event, then goes away

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/threads/t/runs", "raw_path": b"/threads/t/runs",
        "query_string": b"", "root_path": "", "client": ("127.0.0.1", 5000), "server": ("t", 80),
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode())],
    }  # fmt: skip
    await served.app(scope, receive, send)  # returns as soon as the client is gone
    assert await asyncio.to_thread(arrived.wait, 30)
    busy = (await served.client.get("/threads/t")).json()["active_run"]
    release.set()
    await served.app.state.server.runs.wait("t")

    thread = (await served.client.get("/threads/t")).json()
    assert busy is not None
    assert [m["content"] for m in thread["messages"]] == ["hi", "Saved anyway."]
    assert thread["runs"][0]["status"] == "completed" and thread["active_run"] is None


async def test_stopping_the_server_cancels_runs_in_progress_and_saves_them(
    make_oracle, fake_openai: FakeOpenAI
) -> None:
    arrived, release = hold_first_request(fake_openai, "Never sent.")
    oracle = make_oracle()
    app = create_app(oracle)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        try:
            async with app.router.lifespan_context(app):
                post = asyncio.create_task(client.post("/threads/t/runs", json={"message": "hi"}))
                assert await asyncio.to_thread(arrived.wait, 30)
            response = await post
        finally:
            release.set()

    assert response.status_code == 503
    assert response.json()["error"]["type"] == "run_cancelled"
    assert [r.status for r in (await oracle.checkpointer.load("t")).runs] == ["cancelled"]
