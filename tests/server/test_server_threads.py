"""Thread management over HTTP: ``DELETE /threads/{id}``, and stateless OpenAI requests
that leave no thread behind."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import openai
import pytest
from support import CodePlugin

from oracle_core import Oracle, Settings
from oracle_core.server import create_app
from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest

AUTH = {"Authorization": "Bearer s3cret"}


def client_for(served) -> openai.AsyncOpenAI:  # type: ignore[no-untyped-def]
    transport = httpx.ASGITransport(app=served.app)
    return openai.AsyncOpenAI(
        base_url="http://127.0.0.1/v1",
        api_key="s3cret",
        http_client=httpx.AsyncClient(transport=transport),
        max_retries=0,
    )


async def test_delete_removes_the_thread_and_a_second_delete_is_404(
    serve, fake_openai: FakeOpenAI
) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(Reply.call("load_capability", {"names": ["notes"]}), Reply.text("ok"))
    served = await serve(CodePlugin("notes"), tokens=("s3cret",))
    await served.client.post("/threads/t1/runs", json={"message": "hi"}, headers=AUTH)

    first = await served.client.delete("/threads/t1", headers=AUTH)
    second = await served.client.delete("/threads/t1", headers=AUTH)

    assert first.status_code == 204
    assert second.status_code == 404
    assert second.json()["error"]["type"] == "thread_not_found"
    assert (await served.client.get("/threads/t1", headers=AUTH)).status_code == 404
    assert (await served.client.get("/threads", headers=AUTH)).json()["threads"] == []


async def test_a_deleted_thread_id_starts_over_empty(serve, fake_openai: FakeOpenAI) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(
        Reply.call("load_capability", {"names": ["notes"]}), Reply.text("one"), Reply.text("two")
    )
    served = await serve(CodePlugin("notes"), tokens=("s3cret",))
    await served.client.post("/threads/t1/runs", json={"message": "first"}, headers=AUTH)
    await served.client.delete("/threads/t1", headers=AUTH)

    await served.client.post("/threads/t1/runs", json={"message": "again"}, headers=AUTH)

    thread = (await served.client.get("/threads/t1", headers=AUTH)).json()
    assert [m["content"] for m in thread["messages"]] == ["again", "two"]
    assert thread["loaded_plugins"] == []
    assert [m["role"] for m in fake_openai.requests[2].messages] == ["system", "user"]


async def test_delete_needs_the_token_and_a_valid_id(serve) -> None:  # type: ignore[no-untyped-def]
    served = await serve(tokens=("s3cret",))

    assert (await served.client.delete("/threads/t1")).status_code == 401
    for bad in ("-x", ".hidden", "a" * 129, "a b", "a%2Fb"):
        response = await served.client.delete(f"/threads/{bad}", headers=AUTH)
        assert response.status_code in (404, 422), bad
        if response.status_code == 422:
            assert "letters, digits" in response.json()["error"]["message"]


async def test_a_thread_with_a_run_in_progress_is_not_deleted(
    serve, fake_openai: FakeOpenAI
) -> None:  # type: ignore[no-untyped-def]
    arrived, release = threading.Event(), threading.Event()

    def hold(request: SeenRequest) -> Reply:
        arrived.set()
        return Reply(content="done", hold=release)

    fake_openai.script(hold)
    served = await serve(tokens=("s3cret",))
    run = asyncio.create_task(
        served.client.post("/threads/busy/runs", json={"message": "hi"}, headers=AUTH)
    )
    await asyncio.to_thread(arrived.wait, 30)

    refused = await served.client.delete("/threads/busy", headers=AUTH)
    release.set()
    await run

    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "thread_busy"
    assert (await served.client.delete("/threads/busy", headers=AUTH)).status_code == 204


@pytest.mark.parametrize("stream", [False, True])
async def test_a_stateless_completion_leaves_no_thread_behind(
    serve, fake_openai: FakeOpenAI, stream: bool
) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(Reply.text("Hello Ada."))
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    response = await client.chat.completions.with_raw_response.create(
        model="oracle",
        messages=[
            {"role": "user", "content": "I am Ada."},
            {"role": "assistant", "content": "Hi."},
            {"role": "user", "content": "Who am I?"},
        ],
        stream=stream,
    )
    parsed = response.parse()
    if stream:
        [chunk async for chunk in parsed]  # type: ignore[union-attr]

    assert (await served.client.get("/threads", headers=AUTH)).json()["threads"] == []
    assert await served.oracle.checkpointer.thread_summaries() == []
    assert "x-oracle-thread" not in response.headers


async def test_a_failed_stateless_completion_leaves_no_thread_either(
    serve, fake_openai: FakeOpenAI
) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(*[Reply.error(400, "no")] * 3)
    served = await serve(tokens=("s3cret",))

    with pytest.raises(openai.InternalServerError):
        await client_for(served).chat.completions.create(
            model="oracle", messages=[{"role": "user", "content": "hi"}]
        )

    assert (await served.client.get("/threads", headers=AUTH)).json()["threads"] == []


async def test_a_stateful_completion_keeps_its_thread(serve, fake_openai: FakeOpenAI) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(Reply.text("kept"))
    served = await serve(tokens=("s3cret",))

    completion = await client_for(served).chat.completions.create(
        model="oracle", messages=[{"role": "user", "content": "hi"}], extra_body={"thread_id": "k"}
    )

    assert completion.model_extra["thread_id"] == "k"  # type: ignore[index]
    assert (await served.client.get("/threads", headers=AUTH)).json()["threads"] == ["k"]


@pytest.mark.slow
def test_a_client_that_hangs_up_mid_stream_leaves_no_thread_either(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    from browser import serve_in_thread

    arrived, release = threading.Event(), threading.Event()

    def slow(request: SeenRequest) -> Reply:
        arrived.set()
        return Reply(content="too late", hold=release)

    fake_openai.script(slow)
    oracle = Oracle(
        entry_points=False,
        model=fake_openai.model(),
        checkpointer=SQLiteCheckpointer(tmp_path / "oracle.db"),
        settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}),
    )
    body = {"model": "x", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    served = serve_in_thread(create_app(oracle))
    url = next(served)
    try:
        with (
            httpx.Client() as client,
            client.stream("POST", f"{url}/v1/chat/completions", json=body) as response,
        ):
            first = next(response.iter_lines())  # the role chunk; then hang up
        assert arrived.wait(30)
    finally:
        release.set()
        next(served, None)  # the server stops: runs end, the app's lifespan closes the store

    store = SQLiteCheckpointer(tmp_path / "oracle.db")
    assert first.startswith("data: ")
    assert asyncio.run(store.threads()) == []
