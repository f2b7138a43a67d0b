"""``oracle chat`` starts a fresh conversation unless told to continue one (``-c``, or
``--thread``), as ``llm chat`` does; it names each plugin it left out, one line on stderr.
Run from a pipe, so each chat is a plain transcript."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import SitePackages, plugin_code

from oracle_core.testing.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # each test starts `oracle chat` processes

FRESH = re.compile(r"oracle chat on thread '(chat-\d{8}-\d{6}-[0-9a-f]{6})'")


@pytest.fixture
def env(site: SitePackages, fake_openai: FakeOpenAI, tmp_path: Path) -> dict[str, str]:
    site.add("oracle-plugin-tides", plugin_code("tides"), entry_point="tides")
    site.add(
        "oracle-plugin-broken", "raise ImportError('no module named lunar')\n", entry_point="broken"
    )
    values = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "OPENAI_"))}
    values.update(
        PYTHONPATH=str(site.root),
        ORACLE_HOME=str(tmp_path / "home"),
        ORACLE_LOAD_PLUGINS="tides",
        ORACLE_MODEL="openai/fake-model",
        ORACLE_API_BASE=fake_openai.url,
        OPENAI_API_KEY="sk-fake",
    )
    return values


def chat(env: dict[str, str], *args: str, say: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oracle_core", "chat", *args],
        env=env, input=say, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def users(fake_openai: FakeOpenAI, index: int) -> list[str]:
    request = fake_openai.requests[index]
    return [str(m["content"]) for m in request.messages if m["role"] == "user"]


def test_each_chat_starts_a_fresh_conversation(
    env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("one"), Reply.text("two"))

    first = chat(env, say="my name is Ada\n")
    second = chat(env, say="what is my name?\n")

    threads = [FRESH.search(r.stdout) for r in (first, second)]
    assert all(threads), first.stdout + second.stdout
    assert threads[0] and threads[1] and threads[0].group(1) != threads[1].group(1)
    assert users(fake_openai, 1) == ["what is my name?"]  # nothing of the first chat


def test_continue_carries_on_the_latest_conversation_of_chat_or_ask(
    env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(*[Reply.text(t) for t in ("a", "b", "c")])

    chat(env, say="my name is Ada\n")
    again = chat(env, "-c", say="what is my name?\n")
    subprocess.run(
        [sys.executable, "-m", "oracle_core", "ask", "-c", "and my age?"],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip

    assert again.returncode == 0, again.stderr
    assert users(fake_openai, 1) == ["my name is Ada", "what is my name?"]
    assert users(fake_openai, 2) == ["my name is Ada", "what is my name?", "and my age?"]


def test_thread_continues_that_thread(env: dict[str, str], fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("a"), Reply.text("b"), Reply.text("c"))

    chat(env, "--thread", "trip", say="to Porto\n")
    chat(env, say="unrelated\n")
    result = chat(env, "--thread", "trip", say="and back\n")

    assert "oracle chat on thread 'trip'" in result.stdout
    assert users(fake_openai, 2) == ["to Porto", "and back"]


def test_continue_and_thread_together_is_a_usage_error(env: dict[str, str]) -> None:
    result = chat(env, "-c", "--thread", "trip")

    assert result.returncode == 2
    assert "-c/--continue or --thread ID, not both" in result.stderr


@pytest.mark.parametrize("quiet", [False, True])
def test_each_plugin_left_out_is_one_line_on_stderr(
    env: dict[str, str], fake_openai: FakeOpenAI, quiet: bool
) -> None:
    env["ORACLE_LOAD_PLUGINS"] = "tides,broken,tdes"

    result = chat(env, *(["-q"] if quiet else []), say="")

    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    if quiet:
        assert lines == []
        return
    assert len(lines) == 2, lines
    broken = next(line for line in lines if "'broken'" in line)
    typo = next(line for line in lines if "'tdes'" in line)
    assert broken.startswith("oracle: plugin 'broken' is left out: ")
    assert "no module named lunar" in broken
    assert typo.startswith("oracle: plugin 'tdes' is left out: ORACLE_LOAD_PLUGINS names 'tdes'")
    assert "(did you mean 'tides'?)" in typo
