"""``POST /threads/{id}/runs`` with ``output_schema``: the answer is JSON for it, parsed as
the run's ``output``; a schema that is not JSON Schema is a 400 naming it, nothing run."""

from __future__ import annotations

from typing import Any

from oracle_core.testing.openai_server import FakeOpenAI, Reply

PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


async def test_a_run_with_an_output_schema_answers_its_parsed_json(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text('{"name": "Ada", "age": 36}'))
    served = await serve()

    response = await served.client.post(
        "/threads/t/runs", json={"message": "who?", "output_schema": PERSON}
    )

    assert response.status_code == 200
    run = response.json()
    assert run["status"] == "completed", run["error"]
    assert run["output"] == {"name": "Ada", "age": 36}
    assert fake_openai.requests[0].body["response_format"]["json_schema"]["schema"] == PERSON


async def test_a_streamed_run_ends_with_the_output_in_its_done_event(
    serve, fake_openai: FakeOpenAI, parse_sse
) -> None:
    fake_openai.script(Reply.text('{"name": "Ada"}'), Reply.text('{"name": "Ada", "age": 36}'))
    served = await serve()

    response = await served.client.post(
        "/threads/t/runs", json={"message": "who?", "output_schema": PERSON, "stream": True}
    )

    kind, done = parse_sse(response.text)[-1]
    assert kind == "done" and done["output"] == {"name": "Ada", "age": 36}
    repair = fake_openai.requests[1].messages[-1]
    assert repair["role"] == "user" and "'age' is a required property" in repair["content"]


async def test_an_output_schema_that_is_not_json_schema_is_a_400_naming_it(
    serve, fake_openai: FakeOpenAI
) -> None:
    served = await serve()

    response = await served.client.post(
        "/threads/t/runs",
        json={"message": "who?", "output_schema": {"type": "object", "required": "age"}},
    )

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_output_schema"
    assert error["message"] == (
        "the output schema is not a valid JSON Schema: at $.required: 'age' is not of type 'array'"
    )
    assert fake_openai.requests == []
    thread = await served.client.get("/threads/t")
    assert thread.status_code == 404  # nothing was saved


async def test_a_run_without_an_output_schema_sends_no_response_format(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Ada, 36."))
    served = await serve()

    response = await served.client.post("/threads/t/runs", json={"message": "who?"})

    assert response.json()["output"] is None
    assert "response_format" not in fake_openai.requests[0].body
    assert response.json()["answer"] == "Ada, 36."
