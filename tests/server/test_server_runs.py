"""Threads and runs over HTTP: JSON and server-sent events, read back, capabilities, health."""

from __future__ import annotations

import json

from support import CodePlugin

from oracle_core.testing.openai_server import FakeOpenAI, Reply


async def test_a_posted_message_is_answered_as_json_with_every_event(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.call("weather_tool", {"text": "Porto"}),
        Reply.text("Rain in Porto."),
    )
    served = await serve(CodePlugin("weather"))

    response = await served.client.post("/threads/trip/runs", json={"message": "Weather?"})

    assert response.status_code == 200
    run = response.json()
    assert run["status"] == "completed"
    assert run["answer"] == "Rain in Porto."
    assert run["thread_id"] == "trip"
    assert run["loaded"] == ["weather"]
    assert run["usage"]["total_tokens"] > 0
    kinds = [e["type"] for e in run["events"]]
    assert kinds[0] == "run_started" and kinds[-1] == "done"
    assert {"tool_call", "tool_result", "capability_loaded", "usage"} <= set(kinds)
    tool_result = next(
        e for e in run["events"] if e["type"] == "tool_result" and e["name"] == "weather_tool"
    )
    assert tool_result["content"] == "weather_tool says Porto"


async def test_a_streamed_run_sends_each_event_as_sse_ending_with_done(
    serve, fake_openai: FakeOpenAI, parse_sse
) -> None:
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.call("weather_tool", {"text": "Porto"}),
        Reply.text("Rain in Porto, all week."),
    )
    served = await serve(CodePlugin("weather"))

    response = await served.client.post(
        "/threads/trip/runs", json={"message": "Weather?", "stream": True}
    )

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.text.startswith("event: run_started\ndata: {")
    events = parse_sse(response.text)
    assert all(kind == data["type"] for kind, data in events)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "run_started" and kinds[-1] == "done"
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("capability_loaded")
    deltas = "".join(data["text"] for kind, data in events if kind == "text_delta")
    assert deltas == "Rain in Porto, all week."
    assert events[-1][1]["answer"] == "Rain in Porto, all week."
    assert [d["names"] for k, d in events if k == "capability_loaded"] == [["weather"]]


async def test_accept_event_stream_also_streams(serve, fake_openai: FakeOpenAI, parse_sse) -> None:
    fake_openai.script(Reply.text("Hi."))
    served = await serve()

    response = await served.client.post(
        "/threads/t/runs", json={"message": "Hello"}, headers={"Accept": "text/event-stream"}
    )

    assert [kind for kind, _ in parse_sse(response.text)][-1] == "done"


async def test_a_thread_shows_its_messages_loaded_plugins_and_tokens_without_private_keys(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply(
            content=None, tool_calls=[("load_capability", {"names": ["weather"]})], usage=(100, 7)
        ),
        Reply(content="Loaded.", usage=(120, 3)),
        Reply(content="Again.", usage=(50, 2)),
    )
    served = await serve(CodePlugin("weather"))
    await served.client.post("/threads/trip/runs", json={"message": "Load weather"})
    await served.client.post("/threads/trip/runs", json={"message": "Again"})

    thread = (await served.client.get("/threads/trip")).json()

    assert [m["role"] for m in thread["messages"]] == [
        "user", "assistant", "tool", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert not [k for m in thread["messages"] for k in m if k.startswith("_")]
    assert thread["loaded_plugins"] == ["weather"]
    assert [r["usage"]["total_tokens"] for r in thread["runs"]] == [230, 52]
    assert thread["usage"] == {"prompt_tokens": 270, "completion_tokens": 12, "total_tokens": 282}
    assert thread["active_run"] is None


async def test_a_failed_run_is_answered_with_its_status_and_error(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.error(400, "the model refuses"))
    served = await serve()

    run = (await served.client.post("/threads/t/runs", json={"message": "Hi"})).json()

    assert run["status"] == "failed"
    assert "the model refuses" in run["error"]


async def test_a_created_thread_is_listed_and_readable_while_empty(serve) -> None:
    served = await serve()

    created = await served.client.post("/threads")
    thread_id = created.json()["thread_id"]

    assert created.status_code == 201
    assert thread_id in (await served.client.get("/threads")).json()["threads"]
    thread = (await served.client.get(f"/threads/{thread_id}")).json()
    assert thread["messages"] == [] and thread["runs"] == []


async def test_an_unknown_thread_is_404(serve) -> None:
    served = await serve()

    response = await served.client.get("/threads/nobody-here")

    assert response.status_code == 404
    assert response.json()["error"] == {
        "type": "thread_not_found",
        "message": "no thread 'nobody-here'",
    }


async def test_capabilities_show_what_list_capabilities_shows_with_a_threads_loads(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.call("load_capability", {"names": ["weather"]}), Reply.text("ok"))
    served = await serve(
        CodePlugin("weather"),
        CodePlugin("notes", visibility="always"),
        CodePlugin("audit", visibility="silent"),
    )
    await served.client.post("/threads/t/runs", json={"message": "load"})

    everywhere = (await served.client.get("/capabilities")).json()
    in_thread = (await served.client.get("/capabilities", params={"thread_id": "t"})).json()

    assert [(c["name"], c["loaded"]) for c in everywhere] == [("weather", False), ("notes", True)]
    assert [(c["name"], c["loaded"]) for c in in_thread] == [("weather", True), ("notes", True)]


async def test_plugins_lists_what_is_installed_with_tiers_tools_and_routes(serve, kiosk) -> None:
    served = await serve(CodePlugin("weather", tools=("forecast", "radar")), kiosk)

    installed = (await served.client.get("/plugins")).json()

    assert installed["model"] == "openai/fake-model"
    weather, kiosk_info = installed["plugins"]
    assert (weather["name"], weather["visibility"]) == ("weather", "on-demand")
    assert [t["name"] for t in weather["tools"]] == ["forecast", "radar"]
    assert {"path": "/plugins/kiosk/hello", "methods": ["GET"], "public": True} in kiosk_info[
        "routes"
    ]
    assert installed["failures"] == []


async def test_health_and_openapi_docs_are_served(serve) -> None:
    served = await serve(tokens=("s3cret",))

    health = await served.client.get("/health")
    spec = (await served.client.get("/openapi.json")).json()

    assert health.json() == {"status": "ok", "version": "0.1.0", "auth": True}
    assert {"/threads", "/threads/{thread_id}", "/threads/{thread_id}/runs", "/capabilities",
            "/plugins", "/v1/chat/completions", "/health"} <= set(spec["paths"])  # fmt: skip
    assert "RunRequest" in json.dumps(spec)


async def test_the_chat_page_and_its_files_are_served_without_a_token(serve) -> None:
    served = await serve(tokens=("s3cret",))

    page = await served.client.get("/")
    script = await served.client.get("/static/app.js")

    assert page.status_code == 200 and "<title>oracle</title>" in page.text
    assert script.status_code == 200 and "readEvents" in script.text
