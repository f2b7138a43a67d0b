"""``/v1/chat/completions`` through the ``openai`` Python client, backed by oracle threads."""

from __future__ import annotations

import httpx
import openai
import pytest
from support import CodePlugin

from oracle_core.testing.openai_server import FakeOpenAI, Reply


def client_for(served, api_key: str = "s3cret") -> openai.AsyncOpenAI:
    """An OpenAI client talking to the app in process."""
    transport = httpx.ASGITransport(app=served.app)
    return openai.AsyncOpenAI(
        base_url="http://127.0.0.1/v1",
        api_key=api_key,
        http_client=httpx.AsyncClient(transport=transport),
        max_retries=0,
    )


async def test_the_openai_client_gets_the_oracles_answer_after_its_tool_calls(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.call("weather_tool", {"text": "Porto"}),
        Reply(content="Rain in Porto.", usage=(10, 5)),
    )
    served = await serve(CodePlugin("weather"), tokens=("s3cret",))
    client = client_for(served)

    completion = await client.chat.completions.create(
        model="oracle", messages=[{"role": "user", "content": "Weather in Porto?"}]
    )

    assert completion.choices[0].message.content == "Rain in Porto."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "oracle"
    assert completion.usage is not None and completion.usage.total_tokens > 15
    assert "weather_tool" in fake_openai.requests[1].tool_names  # loaded within the request


async def test_a_streamed_completion_yields_the_answer_in_chunks_with_usage(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply.call("weather_tool", {"text": "x"}), Reply.text("Sunny and warm all day.")
    )
    served = await serve(CodePlugin("weather", visibility="always"), tokens=("s3cret",))
    client = client_for(served)

    stream = await client.chat.completions.create(
        model="any-name",
        messages=[{"role": "user", "content": "Weather?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Sunny and warm all day."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    assert {c.model for c in chunks} == {"any-name"}


async def test_without_a_thread_the_earlier_messages_seed_a_new_thread(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Your name is Ada."))
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    await client.chat.completions.create(
        model="oracle",
        messages=[
            {"role": "system", "content": "client instructions are not the oracle's"},
            {"role": "user", "content": "I am Ada."},
            {"role": "assistant", "content": "Hello Ada."},
            {"role": "user", "content": [{"type": "text", "text": "Who am I?"}]},
        ],
    )

    sent = fake_openai.requests[0].messages
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "I am Ada."), ("assistant", "Hello Ada."), ("user", "Who am I?"),
    ]  # fmt: skip
    assert "client instructions" not in sent[0]["content"]


async def test_a_thread_id_continues_an_oracle_thread_with_only_the_last_message(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("First."), Reply.text("Second."))
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    await client.chat.completions.create(
        model="oracle",
        messages=[{"role": "user", "content": "one"}],
        extra_body={"thread_id": "mine"},
    )
    raw = await client.chat.completions.with_raw_response.create(
        model="oracle",
        messages=[
            {"role": "user", "content": "ignored history"},
            {"role": "user", "content": "two"},
        ],
        extra_headers={"X-Oracle-Thread": "mine"},
    )

    assert raw.headers["x-oracle-thread"] == "mine"
    assert raw.parse().choices[0].message.content == "Second."
    sent = fake_openai.requests[1].messages
    assert [m["content"] for m in sent[1:]] == ["one", "First.", "two"]


async def test_a_wrong_api_key_is_an_authentication_error(serve) -> None:
    served = await serve(tokens=("s3cret",))
    client = client_for(served, api_key="wrong")

    with pytest.raises(openai.AuthenticationError, match="invalid bearer token"):
        await client.chat.completions.create(
            model="oracle", messages=[{"role": "user", "content": "hi"}]
        )


@pytest.mark.parametrize("earlier", [201, 5_000, 20_000])
async def test_a_stateless_request_with_a_huge_history_is_refused_and_stores_nothing(
    serve, fake_openai: FakeOpenAI, earlier: int
) -> None:
    served = await serve(tokens=("s3cret",))
    client = client_for(served)
    history = [{"role": "user" if i % 2 else "assistant", "content": "x"} for i in range(earlier)]

    with pytest.raises(openai.UnprocessableEntityError, match="earlier messages; this server"):
        await client.chat.completions.create(
            model="oracle", messages=[*history, {"role": "user", "content": "hi"}]
        )
    assert fake_openai.requests == []
    assert await served.app.state.oracle.checkpointer.threads() == []


async def test_a_stateless_request_with_an_overlong_earlier_message_is_refused(serve) -> None:
    served = await serve(tokens=("s3cret",))
    client = client_for(served)
    history = [{"role": "assistant", "content": "y" * 40_000}]

    with pytest.raises(openai.UnprocessableEntityError, match="an earlier message is 40000"):
        await client.chat.completions.create(
            model="oracle", messages=[*history, {"role": "user", "content": "hi"}]
        )


async def test_the_last_message_must_be_the_users(serve) -> None:
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    with pytest.raises(openai.BadRequestError, match="the last message must be the user's"):
        await client.chat.completions.create(
            model="oracle", messages=[{"role": "assistant", "content": "hi"}]
        )


async def test_a_failed_run_is_a_server_error_the_client_does_not_retry(
    serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.error(400, "the model refuses"))
    served = await serve(tokens=("s3cret",))
    transport = httpx.ASGITransport(app=served.app)
    client = openai.AsyncOpenAI(
        base_url="http://127.0.0.1/v1",
        api_key="s3cret",
        http_client=httpx.AsyncClient(transport=transport),
    )

    with pytest.raises(openai.InternalServerError, match="the model refuses"):
        await client.chat.completions.create(
            model="oracle", messages=[{"role": "user", "content": "hi"}]
        )
    assert len(fake_openai.requests) == 1


async def test_a_failed_streamed_run_raises_in_the_client(serve, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.error(400, "the model refuses"))
    served = await serve(tokens=("s3cret",))
    client = client_for(served)

    stream = await client.chat.completions.create(
        model="oracle", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    with pytest.raises(openai.APIError, match="the model refuses"):
        async for _ in stream:
            pass


async def test_models_lists_the_oracle(serve) -> None:
    served = await serve(tokens=("s3cret",))

    models = await client_for(served).models.list()

    assert [m.id for m in models.data] == ["oracle"]
