"""The direct model path: ``OpenAIModel`` sends what ``LiteLLMModel`` sends, and fails alike.

Both models talk to one fake OpenAI server on 127.0.0.1; for each request the JSON bodies
the server received must be equal, and for each failure the two errors must read alike and
take the same number of attempts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from oracle_core import ModelError, ModelRequest, ModelResponse, Oracle, Settings
from oracle_core.authoring.tools.tool import Tool
from oracle_core.models.completions import ProviderModel
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.models.openai import OpenAIModel, model_for, sends_directly
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.messages import Usage

MODEL = "openai/fake-model"


def _tool(name: str, description: str, properties: dict[str, Any]) -> Tool:
    schema = {"type": "object", "properties": properties, "required": sorted(properties)}
    return Tool(name=name, description=description, parameters=schema, function=lambda **kw: kw)


WEATHER = _tool("get_weather", "The weather in a city.", {"city": {"type": "string"}})
ADD = _tool("add", "Add two numbers.", {"a": {"type": "number"}, "b": {"type": "number"}})

HISTORY = (
    {"role": "user", "content": "Weather in Paris, and 2+3?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21°C"},
    {"role": "tool", "tool_call_id": "call_2", "content": "5", "_private": "never sent"},
)


def request(
    messages: tuple[dict[str, Any], ...] = ({"role": "user", "content": "Hello"},),
    tools: tuple[Tool, ...] = (),
    **options: Any,
) -> ModelRequest:
    return ModelRequest("thread", "run", 1, MODEL, "You are terse.", messages, tools, options)


REQUESTS = {
    "plain text": request(),
    "tools shown": request(tools=(WEATHER, ADD)),
    "tool results in history": request(HISTORY, (WEATHER, ADD)),
    "options": request(temperature=0.2, max_tokens=50, seed=7, stop=["\n\n"], top_p=None),
    "tool choice": request(tools=(WEATHER,), tool_choice="required", parallel_tool_calls=False),
    "extra body": request(extra_body={"top_k": 3}),
}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retry backoff in milliseconds, for both paths: they share one retry loop.

    Both paths retry themselves, only errors that may pass: litellm's own retries would
    retry a 400 or a 401 too once ``tenacity`` is importable (LangChain brings it), and the
    SDK's are off, so whether either is installed or changed changes nothing here.
    """
    monkeypatch.setattr(ProviderModel, "retry_delay", 0.001)


def both(url: str, num_retries: int = 2) -> list[LiteLLMModel | OpenAIModel]:
    return [
        LiteLLMModel(MODEL, api_base=url, api_key="sk-fake", num_retries=num_retries),
        OpenAIModel(MODEL, api_base=url, api_key="sk-fake", num_retries=num_retries),
    ]


async def answer(model: LiteLLMModel | OpenAIModel, req: ModelRequest, stream: bool) -> Any:
    if not stream:
        return await model.complete(req)
    pieces = [piece async for piece in model.stream(req)]
    assert isinstance(pieces[-1], ModelResponse)
    return pieces


async def failure(model: LiteLLMModel | OpenAIModel, stream: bool) -> str:
    with pytest.raises(ModelError) as caught:
        await answer(model, request(), stream)
    return str(caught.value)


# -- what is sent --------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", list(REQUESTS))
async def test_both_paths_send_the_same_body(fake: FakeOpenAI, name: str, stream: bool) -> None:
    fake.respond_with(lambda seen: Reply(content="Fine.", usage=(30, 2)))
    req = REQUESTS[name]

    for model in both(fake.url):
        await answer(model, req, stream)

    through_litellm, direct = (seen.body for seen in fake.requests)
    assert direct == through_litellm
    assert "_private" not in json.dumps(direct)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_both_paths_read_the_same_answer_tool_calls_and_usage(
    fake: FakeOpenAI, stream: bool
) -> None:
    reply = Reply(content="Checking.", tool_calls=[("get_weather", {"city": "Oslo"})], usage=(9, 4))
    fake.script(reply, reply)

    results = [await answer(model, REQUESTS["tools shown"], stream) for model in both(fake.url)]

    through_litellm, direct = results
    if stream:
        pieces = [p for p in direct if isinstance(p, str)]
        assert pieces == [p for p in through_litellm if isinstance(p, str)]
        assert "".join(pieces) == "Checking."
        through_litellm, direct = through_litellm[-1], direct[-1]
    assert direct.usage == through_litellm.usage == Usage(9, 4)
    assert direct.text == through_litellm.text == "Checking."
    for call in (*direct.tool_calls, *through_litellm.tool_calls):
        call.pop("id")  # the fake makes a fresh id for every answer
    assert direct.tool_calls == through_litellm.tool_calls
    assert direct.tool_calls[0]["function"]["arguments"] == '{"city": "Oslo"}'


async def test_a_request_litellm_would_reshape_is_sent_through_litellm(fake: FakeOpenAI) -> None:
    fake.respond_with(lambda seen: Reply(content="{}", usage=(3, 1)))
    req = request(response_format={"type": "json_object"}, user="someone")
    litellm_model = LiteLLMModel(MODEL, api_base=fake.url, api_key="sk-fake")
    direct = OpenAIModel(MODEL, api_base=fake.url, api_key="sk-fake")

    assert direct.body(req) is None
    await litellm_model.complete(req)
    assert (await direct.complete(req)).text == "{}"
    assert fake.requests[1].body == fake.requests[0].body


def test_only_openai_strings_with_pass_through_options_go_direct() -> None:
    assert sends_directly("openai/gpt-4o-mini", {"temperature": 0, "response_format": None})
    assert sends_directly("openai/llama-3-8b-instruct", {"extra_body": {"top_k": 3}})
    assert not sends_directly("openai/o3-mini")  # litellm rewrites its system message
    assert not sends_directly("openai/gpt-5")
    assert not sends_directly("anthropic/claude-3-5-haiku")
    assert not sends_directly("gpt-4o-mini")
    assert not sends_directly("openai/gpt-4o", {"user": "u"})


# -- how failures read -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "attempts"), [(400, 1), (401, 1), (403, 1), (404, 1), (422, 1), (500, 3), (503, 3)]
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_both_paths_fail_alike_after_the_same_attempts(
    fake: FakeOpenAI, quick_retries: None, status: int, attempts: int, stream: bool
) -> None:
    fake.respond_with(lambda seen: Reply.error(status, f"scripted failure {status}"))
    pattern = re.compile(
        rf"^model call to '{MODEL}' failed \(HTTP {status}\): \w+: .*scripted failure {status}"
    )

    for model in both(fake.url):
        before = len(fake.requests)
        assert pattern.match(await failure(model, stream))
        assert len(fake.requests) - before == attempts


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_both_paths_retry_a_rate_limit_and_then_answer(
    fake: FakeOpenAI, quick_retries: None, stream: bool
) -> None:
    for model in both(fake.url):
        fake.script(Reply.error(429, "slow down"), Reply(content="Done.", usage=(5, 1)))
        before = len(fake.requests)
        result = await answer(model, request(), stream)
        assert (result[-1] if stream else result).text == "Done."
        assert len(fake.requests) - before == 2


async def test_no_retry_when_retries_are_off(fake: FakeOpenAI, quick_retries: None) -> None:
    fake.respond_with(lambda seen: Reply.error(500, "down"))

    for model in both(fake.url, num_retries=0):
        assert "(HTTP 500)" in await failure(model, stream=False)
    assert len(fake.requests) == 2


@pytest.fixture
def hangup() -> Iterator[tuple[str, list[int]]]:
    """A port on 127.0.0.1 that accepts connections and closes them unanswered."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", accepted
    listener.close()
    thread.join(timeout=5)


async def test_both_paths_retry_a_dropped_connection_alike(
    hangup: tuple[str, list[int]], quick_retries: None
) -> None:
    url, accepted = hangup

    for model in both(url):
        before = len(accepted)
        message = await failure(model, stream=False)
        assert message.startswith(
            f"model call to '{MODEL}' failed: cannot connect to the model server at {url} ("
        )
        assert len(accepted) - before == 3


async def test_both_paths_name_the_model_when_nothing_listens(quick_retries: None) -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    closed.close()

    for model in both(url, num_retries=0):
        message = await failure(model, stream=True)
        assert message.startswith(
            f"model call to '{MODEL}' failed: cannot connect to the model server at {url} "
            "(connection refused: nothing listens there)"
        )


# -- which model an oracle picks -------------------------------------------------------------


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"ORACLE_HOME": str(tmp_path), **env})


def test_an_openai_model_string_gets_the_direct_path(tmp_path: Path) -> None:
    oracle = Oracle(entry_points=False, settings=settings(tmp_path), model="openai/gpt-4o-mini")
    assert isinstance(oracle.model, OpenAIModel)


def test_other_model_strings_keep_litellm(tmp_path: Path) -> None:
    for name in ("anthropic/claude-3-5-haiku", "gpt-4o-mini", "openai/o3-mini"):
        oracle = Oracle(entry_points=False, settings=settings(tmp_path), model=name)
        assert type(oracle.model) is LiteLLMModel


def test_the_operator_switch_forces_litellm(tmp_path: Path) -> None:
    forced = settings(tmp_path, ORACLE_MODEL="openai/gpt-4o", ORACLE_MODEL_CLIENT="litellm")
    assert type(Oracle(entry_points=False, settings=forced).model) is LiteLLMModel


def test_an_unknown_switch_value_says_what_is_allowed() -> None:
    with pytest.raises(
        ValueError,
        match="ORACLE_MODEL_CLIENT='sdk' in the environment is not valid: expected one of auto, litellm",
    ):
        model_for(MODEL, env={"ORACLE_MODEL_CLIENT": "sdk"})


def test_the_test_guard_refuses_a_direct_request_off_this_machine() -> None:
    from oracle_core.testing.guard import RealModelRequestError, refuse_model_requests

    async def call() -> list[Any]:
        return [p async for p in OpenAIModel("openai/gpt-4o", api_key="sk-x").stream(request())]

    with refuse_model_requests() as refused, pytest.raises(RealModelRequestError):
        asyncio.run(call())
    assert len(refused) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["ask", "What is the answer?"],
        ["What is the answer?"],  # the default command
        ["ask", "-o", "temperature", "0.2", "-o", "seed", "7", "What is the answer?"],
    ],
)
def test_oracle_ask_on_the_direct_path_never_imports_litellm(
    fake: FakeOpenAI, tmp_path: Path, args: list[str]
) -> None:
    fake.respond_with(lambda seen: Reply(content="Forty-two.", usage=(20, 3)))
    child = textwrap.dedent(
        f"""
        import sys
        from oracle_core.cli import main
        try:
            main({args!r}, standalone_mode=False)
        finally:
            print("litellm imported:", "litellm" in sys.modules)
        """
    )
    env = {
        **os.environ,
        "ORACLE_HOME": str(tmp_path),
        "ORACLE_LOAD_PLUGINS": "",
        "ORACLE_MODEL": MODEL,
        "ORACLE_API_BASE": fake.url,
        "OPENAI_API_KEY": "sk-fake",
    }
    env.pop("ORACLE_MODEL_CLIENT", None)

    done = subprocess.run(
        [sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Forty-two.", "litellm imported: False"]
    assert len(fake.requests) == 1


# -- litellm's own settings ------------------------------------------------------------------


@pytest.fixture
def litellm_loggers() -> Iterator[list[logging.Logger]]:
    from oracle_core.environment import LITELLM_LOGGERS

    loggers = [logging.getLogger(name) for name in LITELLM_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.NOTSET)
    yield loggers
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)


def test_litellm_logs_warnings_only_unless_the_operator_asks_for_more(
    litellm_loggers: list[logging.Logger], monkeypatch: pytest.MonkeyPatch
) -> None:
    from oracle_core.environment import configure_litellm

    module = SimpleNamespace()
    monkeypatch.delenv("LITELLM_LOG", raising=False)
    litellm_loggers[1].setLevel(logging.DEBUG)  # a level set in code is the user's

    assert configure_litellm(module) is module
    assert (module.telemetry, module.suppress_debug_info) == (False, True)
    levels = [logger.level for logger in litellm_loggers]
    assert levels == [logging.WARNING, logging.DEBUG, logging.WARNING]


def test_litellm_log_keeps_litellm_at_the_operators_level(
    litellm_loggers: list[logging.Logger], monkeypatch: pytest.MonkeyPatch
) -> None:
    from oracle_core.environment import configure_litellm

    monkeypatch.setenv("LITELLM_LOG", "INFO")
    configure_litellm(SimpleNamespace())

    assert all(logger.level == logging.NOTSET for logger in litellm_loggers)
