"""Tool results posted for a call that waits for approval are a 409 saying so (issue 38,
hole 9), on every endpoint that takes tool results, whole or streamed; nothing runs, the
operation stays pending, and the server goes on answering.

Seeded variants: the endpoint (``/v1/chat/completions`` with the thread in the header or in
``thread_id``, ``/v1/responses`` with ``previous_response_id``), streamed or not, the result's
text (plain, empty, lone surrogates, very long JSON), and a result for a made-up call beside it.
"""

from __future__ import annotations

import json
import random
from typing import Any

from support import Careful

from oracle_core.server.openai_responses import thread_of
from oracle_core.testing.openai_server import FakeOpenAI, Reply

CASES = 18
AUTH = {"Authorization": "Bearer s3cret"}
TEXTS = ("deleted", "", "\ud83d done \ude00", json.dumps({"ok": ["x" * 5000]}), "\x00\x1b[31m")


async def _waiting(served: Any, fake_openai: FakeOpenAI, thread: str) -> dict[str, Any]:
    """Start a run on ``thread`` that waits for approval of ``delete_file``; its call."""
    fake_openai.script(Reply.call("delete_file", {"path": "a.txt"}))
    answer = await served.client.post(
        "/v1/chat/completions",
        json={"model": "oracle", "messages": [{"role": "user", "content": "Delete a.txt"}]},
        headers={**AUTH, "X-Oracle-Thread": thread},
    )
    assert answer.json()["choices"][0]["finish_reason"] == "waiting_for_approval", answer.text
    state = await served.oracle.checkpointer.load(thread)
    [call] = [c for m in state.messages for c in m.get("tool_calls") or []]
    return {"call": call, "operation": answer.json()["oracle"]["operations"][0]["id"]}


async def _waiting_response(served: Any, fake_openai: FakeOpenAI) -> dict[str, Any]:
    """A ``/v1/responses`` response that waits for approval of ``delete_file``; its call."""
    fake_openai.script(Reply.call("delete_file", {"path": "a.txt"}))
    first = await served.client.post(
        "/v1/responses", json={"model": "oracle", "input": "Delete a.txt"}, headers=AUTH
    )
    assert first.json()["status"] == "incomplete", first.text
    thread, _ = thread_of(first.json()["id"], "default")
    state = await served.oracle.checkpointer.load(thread)
    [call] = [c for m in state.messages for c in m.get("tool_calls") or []]
    operation = first.headers["X-Oracle-Operations"]
    return {"call": call, "operation": operation, "response": first.json()["id"]}


async def _results(
    served: Any, fake_openai: FakeOpenAI, rng: random.Random, index: int
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A run that waits, on a seeded endpoint, and the request posting its call's result
    (maybe beside one for a made-up call): the case's name, the wait, the request."""
    text = rng.choice(TEXTS)
    extra, stream = rng.random() < 0.3, rng.random() < 0.5
    kind = rng.choice(("chat-header", "chat-field", "responses"))
    name = f"case {index} ({kind}, stream={stream}, extra={extra}, text={text[:20]!r})"
    if kind == "responses":
        waiting = await _waiting_response(served, fake_openai)
        outputs = [(waiting["call"]["id"], text)] + ([("call_made_up", "x")] if extra else [])
        body = {
            "model": "oracle",
            "previous_response_id": waiting["response"],
            "input": [
                {"type": "function_call_output", "call_id": i, "output": t} for i, t in outputs
            ],
            "stream": stream,
        }
        return name, waiting, {"url": "/v1/responses", "json": body, "headers": AUTH}
    thread = f"waits-{index}"
    waiting = await _waiting(served, fake_openai, thread)
    results = [(waiting["call"]["id"], text)] + ([("call_made_up", "x")] if extra else [])
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Delete a.txt"},
        {"role": "assistant", "content": None, "tool_calls": [waiting["call"]]},
        *({"role": "tool", "tool_call_id": i, "content": t} for i, t in results),
    ]
    body = {"model": "oracle", "messages": messages, "stream": stream}
    headers = dict(AUTH)
    if kind == "chat-header":
        headers["X-Oracle-Thread"] = thread
    else:
        body["thread_id"] = thread
    return name, waiting, {"url": "/v1/chat/completions", "json": body, "headers": headers}


async def test_results_for_a_call_that_waits_for_approval_are_a_409_that_says_so(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    rng = random.Random(38)
    served = await serve(Careful(), tokens=("s3cret",))
    for index in range(CASES):
        name, waiting, request = await _results(served, fake_openai, rng, index)
        call, operation = waiting["call"], waiting["operation"]
        asked = len(fake_openai.requests)

        answer = await served.client.post(  # as JSON escapes: lone surrogates travel so
            request["url"],
            content=json.dumps(request["json"]),
            headers={**request["headers"], "Content-Type": "application/json"},
        )

        case = f"{name}: {answer.text[:300]}"
        assert answer.status_code == 409, case
        error = answer.json()["error"]
        assert error["type"] == "operation_error", case
        assert f"the call {call['id']!r}, which waits for a person's approval" in error["message"]
        assert f"operation {operation}" in error["message"], case
        assert len(fake_openai.requests) == asked, case  # no model call
        shown = await served.client.get(f"/operations/{operation}", headers=AUTH)
        assert shown.json()["status"] == "pending", case
    assert (await served.client.get("/health")).status_code == 200


async def test_once_decided_the_run_goes_on_and_a_later_result_is_refused_as_no_open_call(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    served = await serve(Careful(), tokens=("s3cret",))
    waiting = await _waiting(served, fake_openai, "decided")
    fake_openai.script(Reply.text("Deleted a.txt."))
    decided = await served.client.post(
        f"/operations/{waiting['operation']}/decision", json={"approve": True}, headers=AUTH
    )
    messages = [
        {"role": "user", "content": "Delete a.txt"},
        {"role": "assistant", "content": None, "tool_calls": [waiting["call"]]},
        {"role": "tool", "tool_call_id": waiting["call"]["id"], "content": "late"},
    ]

    late = await served.client.post(
        "/v1/chat/completions",
        json={"model": "oracle", "messages": messages, "thread_id": "decided"},
        headers=AUTH,
    )

    assert decided.status_code == 200, decided.text
    assert late.status_code == 400, late.text
    assert late.json()["error"]["type"] == "invalid_tool_results"
