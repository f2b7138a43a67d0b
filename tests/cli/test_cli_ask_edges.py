"""``oracle ask`` as a user of llm expects it: piped text joined to the prompt, a fresh
conversation each time (``-c`` and ``--thread`` continue one), Ctrl-C exiting 130, and a
step limit that says how to raise it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli_support import ask
from click.testing import CliRunner

from oracle_core.cli import main
from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest


def users(request: SeenRequest) -> list[str]:
    return [str(m["content"]) for m in request.messages if m["role"] == "user"]


def ask_threads(home: Path) -> list[str]:
    async def listing() -> list[str]:
        store = SQLiteCheckpointer(home / "oracle.db")
        try:
            return await store.threads()
        finally:
            await store.close()

    return asyncio.run(listing())


# -- standard input ----------------------------------------------------------------------

PIPED = ["text", "text\n", "line one\nline two\n\n", "    indented code\n", "\n\nafter blanks"]


@pytest.mark.parametrize("piped", PIPED)
@pytest.mark.parametrize("prompt", ["summarise this", "two\nlines"])
def test_piped_text_comes_before_the_prompt_a_blank_line_between(
    tmp_path: Path, fake_openai: FakeOpenAI, piped: str, prompt: str
) -> None:
    fake_openai.script(Reply.text("ok"))

    result = ask(tmp_path, fake_openai, prompt, stdin=piped)

    assert result.exit_code == 0, result.output
    assert users(fake_openai.requests[0]) == [f"{piped.strip(chr(10))}\n\n{prompt}"]


@pytest.mark.parametrize("piped", ["", "\n", "  \n\n"])
def test_an_empty_pipe_leaves_the_prompt_alone(
    tmp_path: Path, fake_openai: FakeOpenAI, piped: str
) -> None:
    fake_openai.script(Reply.text("ok"))

    result = ask(tmp_path, fake_openai, "just this", stdin=piped)

    assert result.exit_code == 0, result.output
    assert users(fake_openai.requests[0]) == ["just this"]


def test_a_dash_still_reads_the_whole_prompt_from_stdin(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("ok"))

    result = ask(tmp_path, fake_openai, "-", stdin="all of it\n")

    assert result.exit_code == 0, result.output
    assert users(fake_openai.requests[0]) == ["all of it"]


# -- conversations -----------------------------------------------------------------------


def test_each_ask_starts_a_fresh_conversation(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("one"), Reply.text("two"))

    first = ask(tmp_path, fake_openai, "first question")
    second = ask(tmp_path, fake_openai, "second question")

    assert (first.exit_code, second.exit_code) == (0, 0), second.output
    assert users(fake_openai.requests[1]) == ["second question"]
    threads = ask_threads(tmp_path)
    assert len(threads) == 2 and "default" not in threads
    assert all(t.startswith("ask-") for t in threads)


def test_continue_carries_on_the_latest_ask_conversation(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))

    ask(tmp_path, fake_openai, "old question")
    ask(tmp_path, fake_openai, "latest question")
    result = ask(tmp_path, fake_openai, "-c", "follow-up")

    assert result.exit_code == 0, result.output
    assert result.stdout == "three\n"
    assert users(fake_openai.requests[2]) == ["latest question", "follow-up"]
    assert len(ask_threads(tmp_path)) == 2


def test_the_long_continue_option_is_the_same(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("one"), Reply.text("two"))

    ask(tmp_path, fake_openai, "question")
    result = ask(tmp_path, fake_openai, "--continue", "again")

    assert result.exit_code == 0, result.output
    assert users(fake_openai.requests[1]) == ["question", "again"]


def test_continue_with_no_conversation_yet_starts_one(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("one"))

    result = ask(tmp_path, fake_openai, "-c", "hello")

    assert result.exit_code == 0, result.output
    assert users(fake_openai.requests[0]) == ["hello"]


def test_thread_continues_a_named_conversation_and_continue_ignores_it(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(*[Reply.text(t) for t in ("a", "b", "c", "d")])

    ask(tmp_path, fake_openai, "on the trip", "--thread", "trip")
    ask(tmp_path, fake_openai, "asked alone")
    ask(tmp_path, fake_openai, "more on the trip", "--thread", "trip")
    ask(tmp_path, fake_openai, "-c", "and alone again")

    assert users(fake_openai.requests[2]) == ["on the trip", "more on the trip"]
    assert users(fake_openai.requests[3]) == ["asked alone", "and alone again"]


def test_continue_and_thread_together_is_a_usage_error(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    result = ask(tmp_path, fake_openai, "-c", "--thread", "trip", "hi")

    assert result.exit_code == 2
    assert "-c/--continue or --thread NAME, not both" in result.output
    assert fake_openai.requests == []


def test_help_says_how_conversations_work() -> None:
    result = CliRunner().invoke(main, ["ask", "--help"])

    assert "-c, --continue" in result.output
    assert "fresh conversation" in result.output


# -- limits and interruptions ------------------------------------------------------------


def test_the_step_limit_names_the_setting_that_raises_it(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(*[Reply.call("list_capabilities")] * 2)

    result = ask(tmp_path, fake_openai, "loop", ORACLE_MAX_STEPS="2")

    assert result.exit_code == 1
    assert "stopped after 2 model calls" in result.stderr
    assert "ORACLE_MAX_STEPS" in result.stderr
    assert "Oracle(max_steps=...)" in result.stderr


def as_from_a_shell() -> None:
    """In the child, before exec: Ctrl-C deliverable, as a shell starts a command. A signal
    ignored or blocked in this test process (by an earlier test of the same worker) would
    be inherited across exec, and the child would never see the SIGINT sent."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_exits_130_with_one_line(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    arrived, release = threading.Event(), threading.Event()

    def slow(request: SeenRequest) -> Reply:
        arrived.set()
        return Reply(content="too late", hold=release)

    fake_openai.script(slow)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "OPENAI_"))}
    env.update(
        ORACLE_HOME=str(tmp_path), ORACLE_LOAD_PLUGINS="", ORACLE_MODEL="openai/fake-model",
        ORACLE_API_BASE=fake_openai.url, OPENAI_API_KEY="sk-fake",
    )  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-m", "oracle_core", "ask", "hi"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=as_from_a_shell,
    )  # fmt: skip
    try:
        assert arrived.wait(60)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        release.set()
        if child.poll() is None:
            child.kill()

    assert child.returncode == 130
    assert out == ""
    assert err == "oracle: interrupted\n"


# -- a failed turn -----------------------------------------------------------------------


def test_a_turn_that_failed_before_any_answer_is_not_sent_again(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.error(401, "Incorrect API key provided"), Reply.text("hello"))

    failed = ask(tmp_path, fake_openai, "hi", "--thread", "t")
    retried = ask(tmp_path, fake_openai, "hi", "--thread", "t")

    assert (failed.exit_code, retried.exit_code) == (1, 0)
    assert users(fake_openai.requests[1]) == ["hi"]
