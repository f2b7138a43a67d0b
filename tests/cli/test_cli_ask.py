"""``oracle ask``: the prompt from stdin, no model means no model, credentials that fail at
once (and are not retried), and the progress line only on a terminal."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pexpect
import pytest

from oracle_core.models.litellm import LiteLLMModel
from oracle_core.models.openai import OpenAIModel
from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest
from oracle_core.values.messages import ModelRequest

CLIENTS = ["auto", "litellm"]  # the direct path and the litellm path


def env_for(fake_openai: FakeOpenAI, tmp_path, **extra: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "OPENAI_"))}
    env.update(
        ORACLE_HOME=str(tmp_path / "home"),
        ORACLE_LOAD_PLUGINS="",
        ORACLE_MODEL="openai/fake-model",
        ORACLE_API_BASE=fake_openai.url,
        OPENAI_API_KEY="sk-fake",
    )
    env.update(extra)
    return {k: v for k, v in env.items() if v != ""}


def ask(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oracle_core", "ask", *args],
        env=env, input=stdin, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def last_user(request: SeenRequest) -> str:
    return str(next(m["content"] for m in reversed(request.messages) if m["role"] == "user"))


@pytest.mark.slow
def test_a_dash_reads_the_prompt_from_stdin(fake_openai: FakeOpenAI, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(Reply.text("Two lines seen."))

    result = ask(env_for(fake_openai, tmp_path), "-", stdin="first line\nsecond line\n")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "Two lines seen.\n"
    assert last_user(fake_openai.requests[0]) == "first line\nsecond line"


@pytest.mark.slow
def test_piped_text_without_a_prompt_is_the_prompt(fake_openai: FakeOpenAI, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(Reply.text("ok"))

    result = ask(env_for(fake_openai, tmp_path), stdin="from the pipe")

    assert result.returncode == 0, result.stderr
    assert last_user(fake_openai.requests[0]) == "from the pipe"
    assert result.stderr == ""  # no progress line: stderr is not a terminal


@pytest.mark.slow
@pytest.mark.parametrize("stdin", ["", "  \n\n"])
def test_an_empty_prompt_is_a_usage_error(fake_openai: FakeOpenAI, tmp_path, stdin: str) -> None:  # type: ignore[no-untyped-def]
    result = ask(env_for(fake_openai, tmp_path), "-", stdin=stdin)

    assert result.returncode == 2
    assert "the prompt is empty" in result.stderr
    assert fake_openai.requests == []


@pytest.mark.slow
def test_without_a_model_ask_says_how_to_set_one_and_runs_nothing(
    fake_openai: FakeOpenAI, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    result = ask(env_for(fake_openai, tmp_path, ORACLE_MODEL=""), "hi")

    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "no model is configured: set ORACLE_MODEL" in result.stderr
    assert "--model demo" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "home" / "oracle.db").exists()  # not even a thread was made


@pytest.mark.slow
def test_model_demo_is_the_offline_stand_in(fake_openai: FakeOpenAI, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = ask(env_for(fake_openai, tmp_path, ORACLE_MODEL=""), "hello", "--model", "demo")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert fake_openai.requests == []


@pytest.mark.slow
@pytest.mark.parametrize("client", CLIENTS)
def test_a_missing_key_is_reported_at_once_naming_what_to_set(
    fake_openai: FakeOpenAI, tmp_path, client: str
) -> None:  # type: ignore[no-untyped-def]
    env = env_for(fake_openai, tmp_path, OPENAI_API_KEY="", ORACLE_MODEL_CLIENT=client)

    result = ask(env, "hi")

    assert result.returncode == 1
    assert "no API key for model 'openai/fake-model'" in result.stderr
    assert "set ORACLE_API_KEY (or pass --api-key), or OPENAI_API_KEY" in result.stderr
    assert "HTTP 500" not in result.stderr
    assert fake_openai.requests == []


@pytest.mark.slow
@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("how", ["--api-key", "ORACLE_API_KEY"])
def test_the_api_key_option_and_variable_reach_the_server(
    fake_openai: FakeOpenAI, tmp_path, client: str, how: str
) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(Reply.text("ok"))
    extra = {"OPENAI_API_KEY": "", "ORACLE_MODEL_CLIENT": client}
    args = ["hi"]
    if how == "--api-key":
        args += ["--api-key", "sk-given"]
    else:
        extra["ORACLE_API_KEY"] = "sk-given"

    result = ask(env_for(fake_openai, tmp_path, **extra), *args)

    assert result.returncode == 0, result.stderr
    assert fake_openai.requests[0].headers["authorization"] == "Bearer sk-given"


@pytest.mark.slow
@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("status", [401, 403])
def test_a_rejected_key_is_reported_once_with_the_fix_and_not_retried(
    fake_openai: FakeOpenAI, tmp_path, client: str, status: int
) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(*[Reply.error(status, "Incorrect API key provided")] * 5)

    result = ask(env_for(fake_openai, tmp_path, ORACLE_MODEL_CLIENT=client), "hi")

    assert result.returncode == 1
    assert f"(HTTP {status})" in result.stderr
    assert "refused the API key: set ORACLE_API_KEY (or pass --api-key)" in result.stderr
    assert len(fake_openai.requests) == 1


def _request() -> ModelRequest:
    return ModelRequest(
        thread_id="t", run_id="r", step=1, model="", system_prompt="s",
        messages=({"role": "user", "content": "hi"},), tools=(),
    )  # fmt: skip


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
async def test_the_direct_path_never_retries_a_request_that_cannot_succeed(
    fake_openai: FakeOpenAI, status: int
) -> None:
    fake_openai.script(*[Reply.error(status, "no")] * 4)
    model = OpenAIModel("openai/fake", api_base=fake_openai.url, api_key="sk", num_retries=3)

    started = time.perf_counter()
    with pytest.raises(Exception, match=f"HTTP {status}"):
        await model.complete(_request())
    elapsed = time.perf_counter() - started
    await model.aclose()

    assert len(fake_openai.requests) == 1
    assert elapsed < 5  # one round trip, no backoff (a retry would add 0.5 s and more)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_the_litellm_path_does_not_retry_them_either(
    fake_openai: FakeOpenAI, status: int
) -> None:
    fake_openai.script(*[Reply.error(status, "no")] * 4)
    model = LiteLLMModel("openai/fake", api_base=fake_openai.url, api_key="sk", num_retries=3)

    with pytest.raises(Exception, match=f"HTTP {status}"):
        await model.complete(_request())

    assert len(fake_openai.requests) == 1


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
async def test_errors_that_may_pass_are_still_retried(fake_openai: FakeOpenAI, status: int) -> None:
    fake_openai.script(Reply.error(status, "busy"), Reply.text("ok"))
    model = OpenAIModel("openai/fake", api_base=fake_openai.url, api_key="sk", num_retries=1)

    response = await model.complete(_request())
    await model.aclose()

    assert response.message["content"] == "ok"
    assert len(fake_openai.requests) == 2


@pytest.mark.slow
def test_a_terminal_gets_a_progress_line_on_stderr_while_the_model_works(
    fake_openai: FakeOpenAI, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    arrived, release = threading.Event(), threading.Event()

    def slow(request: SeenRequest) -> Reply:
        arrived.set()
        return Reply(content="done", hold=release)

    fake_openai.script(slow)
    env = env_for(fake_openai, tmp_path)
    child = pexpect.spawn(
        sys.executable, ["-m", "oracle_core", "ask", "hi"], env=env, encoding="utf-8", timeout=60
    )
    try:
        child.expect("thinking")
        assert arrived.wait(30)
    finally:
        release.set()
    child.expect(pexpect.EOF)
    child.close()

    assert child.exitstatus == 0
    assert "done" in (child.before or "")
