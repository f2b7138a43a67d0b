"""``/v1/responses`` (the OpenAI Responses API) through the official ``openai`` client."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from support import CodePlugin

from oracle_core.testing.openai_server import FakeOpenAI, Reply

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def client_for(served: Any) -> openai.AsyncOpenAI:
    transport = httpx.ASGITransport(app=served.app)
    return openai.AsyncOpenAI(
        base_url="http://127.0.0.1/v1",
        api_key="s3cret",
        http_client=httpx.AsyncClient(transport=transport),
        max_retries=0,
    )


async def test_a_response_answers_and_the_next_continues_its_thread(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.text("Loaded, and it rains."),
        Reply.text("Still raining."),
    )
    served = await serve(CodePlugin("weather"), tokens=("s3cret",))
    client = client_for(served)

    first = await client.responses.create(model="oracle", input="Weather in Porto?")
    second = await client.responses.create(
        model="oracle", input="And now?", previous_response_id=first.id
    )

    assert first.output_text == "Loaded, and it rains."
    assert second.output_text == "Still raining."
    assert "weather_tool" in fake_openai.requests[2].tool_names  # the thread's load held
    assert [m["content"] for m in fake_openai.requests[2].messages if m["role"] == "user"] == [
        "Weather in Porto?",
        "And now?",
    ]
    assert second.usage is not None and second.usage.total_tokens >= 0


async def test_a_client_function_call_comes_back_as_an_item_and_its_output_continues(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.call("get_weather", {"city": "Lima"}), Reply.text("Sunny in Lima."))
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    first = await client.responses.create(model="oracle", input="Weather in Lima?", tools=[WEATHER])
    [call] = [item for item in first.output if item.type == "function_call"]
    second = await client.responses.create(
        model="oracle",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        tools=[WEATHER],
    )

    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Lima"})
    assert second.output_text == "Sunny in Lima."
    assert fake_openai.requests[1].messages[-1]["content"] == "sunny"


async def test_a_streamed_response_sends_typed_events_ending_with_completed(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Hello there, friend."))
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    stream = await client.responses.create(model="oracle", input="Hi", stream=True)
    events = [event async for event in stream]

    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Hello there, friend."
    assert events[-1].response.output_text == "Hello there, friend."


async def test_another_users_previous_response_is_a_400_and_nothing_runs(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Private answer."))
    served = await serve(tokens=("s3cret",))
    client = client_for(served)
    mine = await client.responses.create(model="oracle", input="Secret?", user="ana")

    with pytest.raises(openai.BadRequestError, match="not the latest response"):
        await client.responses.create(
            model="oracle", input="Tell me", previous_response_id=mine.id, user="bo"
        )
    assert len(fake_openai.requests) == 1


@pytest.mark.parametrize(
    "previous", ["resp_nope", "resp_" + "0" * 48, "x" * 10_000], ids=["short", "unknown", "huge"]
)
async def test_a_previous_response_id_that_is_not_one_here_is_a_400(
    serve: Any, fake_openai: FakeOpenAI, previous: str
) -> None:
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    with pytest.raises(openai.BadRequestError):
        await client.responses.create(model="oracle", input="Hi", previous_response_id=previous)
    assert fake_openai.requests == []


async def test_structured_text_format_reaches_the_model(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text('{"city": "Lima"}'))
    served = await serve(tokens=("s3cret",))
    client = client_for(served)
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }

    response = await client.responses.create(
        model="oracle",
        input="Which city?",
        text={"format": {"type": "json_schema", "name": "place", "schema": schema, "strict": True}},
    )

    assert json.loads(response.output_text) == {"city": "Lima"}
    sent = fake_openai.requests[0].body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == schema
