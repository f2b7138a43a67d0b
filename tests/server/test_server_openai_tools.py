"""The oracle as any OpenAI client's model: its tools, its options, its waits.

Driven with the official ``openai`` client against the app; the model behind the oracle is
the fake OpenAI server, so what reached the model is read from the HTTP bodies it got.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from support import Careful, CodePlugin

from oracle_core import PluginManifest, hookimpl, tool
from oracle_core.testing.openai_server import FakeOpenAI, Reply

WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def client_for(served: Any, thread: str | None = None) -> openai.AsyncOpenAI:
    """An OpenAI client talking to the app in process (pinned to ``thread`` if given)."""
    transport = httpx.ASGITransport(app=served.app)
    headers = {"X-Oracle-Thread": thread} if thread else {}
    return openai.AsyncOpenAI(
        base_url="http://127.0.0.1/v1",
        api_key="s3cret",
        http_client=httpx.AsyncClient(transport=transport, headers=headers),
        max_retries=0,
    )


@pytest.mark.parametrize("thread", [None, "pinned"], ids=["stateless", "stateful"])
async def test_a_client_tool_call_comes_back_and_the_tool_message_continues_the_run(
    serve: Any, fake_openai: FakeOpenAI, thread: str | None
) -> None:
    fake_openai.script(
        Reply.call("get_weather", {"city": "Lima"}), Reply.text("Lima is sunny, 24 C.")
    )
    served = await serve(CodePlugin("weather"), tokens=("s3cret",))
    client = client_for(served, thread)
    asked: list[Any] = [{"role": "user", "content": "Weather in Lima?"}]

    first = await client.chat.completions.create(model="oracle", messages=asked, tools=[WEATHER])
    [call] = first.choices[0].message.tool_calls or []
    reply = {"role": "tool", "tool_call_id": call.id, "content": "sunny, 24 C"}
    answered = [*asked, first.choices[0].message.model_dump(exclude_none=True), reply]
    second = await client.chat.completions.create(
        model="oracle", messages=answered, tools=[WEATHER]
    )

    assert first.choices[0].finish_reason == "tool_calls"
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Lima"},
    )
    assert second.choices[0].message.content == "Lima is sunny, 24 C."
    assert second.choices[0].finish_reason == "stop"
    sent = fake_openai.requests
    assert "get_weather" in sent[0].tool_names and "load_capability" in sent[0].tool_names
    assert sent[1].messages[-1] == {
        "role": "tool",
        "tool_call_id": call.id,
        "content": "sunny, 24 C",
    }


async def test_a_streamed_client_tool_call_arrives_as_tool_call_deltas(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.call("get_weather", {"city": "Lima"}))
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    stream = await client.chat.completions.create(
        model="oracle",
        messages=[{"role": "user", "content": "Weather in Lima?"}],
        tools=[WEATHER],
        stream=True,
    )
    chunks = [c async for c in stream]

    deltas = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or []]
    assert [(d.function.name, d.function.arguments) for d in deltas if d.function] == [
        ("get_weather", '{"city": "Lima"}')
    ]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("options", "sent"),
    [
        ({"temperature": 0.3}, {"temperature": 0.3}),
        ({"top_p": 0.5, "seed": 7}, {"top_p": 0.5, "seed": 7}),
        ({"max_tokens": 50, "stop": ["END"]}, {"max_tokens": 50, "stop": ["END"]}),
        ({"presence_penalty": 0.1, "frequency_penalty": 0.2}, {"presence_penalty": 0.1}),
        (
            {"response_format": {"type": "json_object"}},
            {"response_format": {"type": "json_object"}},
        ),
    ],
    ids=["temperature", "top_p+seed", "max_tokens+stop", "penalties", "json_object"],
)
async def test_sampling_options_reach_the_model(
    serve: Any, fake_openai: FakeOpenAI, options: dict[str, Any], sent: dict[str, Any]
) -> None:
    fake_openai.script(Reply.text('{"ok": true}'))
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    await client.chat.completions.create(
        model="oracle", messages=[{"role": "user", "content": "hi"}], **options
    )

    body = fake_openai.requests[0].body
    assert {k: body.get(k) for k in sent} == sent


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"logprobs": True}, "`logprobs`"),
        ({"modalities": ["audio"]}, "`modalities`"),
        ({"frobnicate": 1}, "'frobnicate'"),
        ({"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
        ({"tools": [{"type": "code_interpreter"}]}, "only function tools"),
    ],
    ids=["logprobs", "modalities", "unknown", "tool-choice", "not-a-function"],
)
async def test_what_the_oracle_cannot_honour_is_a_400_naming_it(
    serve: Any, fake_openai: FakeOpenAI, extra: dict[str, Any], says: str
) -> None:
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="oracle", messages=[{"role": "user", "content": "hi"}], extra_body=extra
        )

    assert says in str(caught.value)
    assert fake_openai.requests == []


@tool
def forecast(city: str) -> str:
    """The forecast for a city."""
    return f"rain in {city}"


class Always:
    """An always plugin with ``forecast``."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="skies", summary="Forecasts.", when_to_use=["weather"], visibility="always"
        )

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        return [forecast]


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("forecast", "the oracle's tool 'forecast' of plugin 'skies'"),
        ("search_capabilities", "meta-tool"),
    ],
)
async def test_a_client_tool_named_like_the_oracles_is_a_400_naming_both(
    serve: Any, fake_openai: FakeOpenAI, name: str, says: str
) -> None:
    served = await serve(Always(), tokens=("s3cret",))
    client = client_for(served)
    clash = {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}

    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="oracle", messages=[{"role": "user", "content": "hi"}], tools=[clash]
        )

    assert f"client tool {name!r}" in str(caught.value) and says in str(caught.value)
    assert fake_openai.requests == []


async def test_a_client_tool_schema_that_is_not_json_schema_is_a_400(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    served = await serve(tokens=("s3cret",))
    client = client_for(served)
    broken = {
        "type": "function",
        "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": 5}}},
    }

    with pytest.raises(openai.BadRequestError, match="not a valid JSON Schema"):
        await client.chat.completions.create(
            model="oracle", messages=[{"role": "user", "content": "hi"}], tools=[broken]
        )
    assert fake_openai.requests == []


@pytest.mark.parametrize("thread", [None, "pinned"], ids=["stateless", "stateful"])
async def test_a_tool_message_for_a_call_the_run_never_made_is_a_400_and_nothing_runs(
    serve: Any, fake_openai: FakeOpenAI, thread: str | None
) -> None:
    served = await serve(tokens=("s3cret",))
    client = client_for(served, thread)
    made_up = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "call_never", "content": "42"},
    ]

    with pytest.raises(openai.BadRequestError, match="call_never"):
        await client.chat.completions.create(model="oracle", messages=made_up, tools=[WEATHER])
    assert fake_openai.requests == []


async def test_models_retrieve_names_the_oracle(serve: Any) -> None:
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    model = await client.models.retrieve("oracle")

    assert model.id == "oracle"
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("gpt-5")


@pytest.mark.parametrize("thread", [None, "pinned"], ids=["stateless", "stateful"])
async def test_a_run_that_waits_for_a_person_says_so_and_the_same_request_after_gets_the_answer(
    serve: Any, fake_openai: FakeOpenAI, thread: str | None
) -> None:
    fake_openai.script(Reply.call("delete_file", {"path": "a.txt"}), Reply.text("Deleted a.txt."))
    served = await serve(Careful(), tokens=("s3cret",))
    asked: Any = [{"role": "user", "content": "Delete a.txt"}]

    waiting = await client_for(served, thread).chat.completions.with_raw_response.create(
        model="oracle", messages=asked
    )
    body = json.loads(waiting.text)
    signal = body["oracle"]
    [operation] = signal["operations"]
    pinned = waiting.headers["X-Oracle-Thread"]  # a stateless request's thread is kept
    assert waiting.headers["X-Oracle-Operations"] == operation["id"]
    decided = await served.client.post(
        operation["decide"]["path"],
        json={"approve": True},
        headers={"Authorization": "Bearer s3cret"},
    )
    again = await client_for(served, pinned).chat.completions.create(model="oracle", messages=asked)

    assert body["choices"][0]["finish_reason"] == "waiting_for_approval"
    assert signal["status"] == "waiting_for_approval" and signal["thread_id"] == pinned
    assert (operation["tool"], operation["arguments"]) == ("delete_file", {"path": "a.txt"})
    assert decided.status_code == 200, decided.text
    assert again.choices[0].message.content == "Deleted a.txt."
    assert again.choices[0].finish_reason == "stop"
    assert len(fake_openai.requests) == 2  # the repeat ran nothing


async def test_a_stateless_conversation_keeps_its_loaded_plugins_from_turn_to_turn(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.text("Loaded: rain in Porto."),
        Reply.text("Still rain."),
        Reply.text("Fresh start."),
    )
    served = await serve(CodePlugin("weather"), tokens=("s3cret",))
    client = client_for(served)
    first: Any = [{"role": "user", "content": "Weather in Porto?"}]

    answer = await client.chat.completions.create(model="oracle", messages=first)
    echoed = answer.choices[0].message.model_dump(exclude_none=True)
    second = [*first, echoed, {"role": "user", "content": "And now?"}]
    await client.chat.completions.create(model="oracle", messages=second)
    edited = [*first, {"role": "assistant", "content": "something else"}, second[-1]]
    await client.chat.completions.create(model="oracle", messages=edited)

    requests = fake_openai.requests
    assert "weather_tool" not in requests[0].tool_names
    assert "weather_tool" in requests[2].tool_names  # carried: no load this turn
    assert "weather_tool" not in requests[3].tool_names  # another history: nothing carried
    threads = await served.oracle.checkpointer.threads()
    assert not [t for t in threads if not t.startswith("chat-keep-")]  # the turns' are gone


PLACE: Any = {
    "type": "json_schema",
    "json_schema": {
        "name": "place",
        "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


async def test_structured_output_is_checked_and_a_wrong_answer_gets_one_repair_turn(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text('{"town": "Lima"}'), Reply.text('{"city": "Lima"}'))
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    completion = await client.chat.completions.create(
        model="oracle", messages=[{"role": "user", "content": "Which city?"}], response_format=PLACE
    )

    assert json.loads(completion.choices[0].message.content or "") == {"city": "Lima"}
    repair = fake_openai.requests[1].messages[-1]
    assert repair["role"] == "user" and "city" in repair["content"]
    assert fake_openai.requests[0].body["response_format"] == PLACE


async def test_a_response_format_that_is_not_json_schema_is_a_400(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    served = await serve(tokens=("s3cret",))
    client = client_for(served)
    broken = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 5}}}

    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(
            model="oracle", messages=[{"role": "user", "content": "hi"}], response_format=broken
        )
    assert fake_openai.requests == []
