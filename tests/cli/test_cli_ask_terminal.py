"""``oracle ask`` at a terminal, as llm users expect it: the answer streams as it arrives
(``--no-stream`` waits for it whole), ``-v`` shows tool calls as they happen, and stdout
stays the answer alone when it is not a terminal. Real pseudo-terminals (pexpect) against
the scripted fake OpenAI server; no sleeps: each test waits for what the terminal shows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pexpect
import pytest
from cli_support import plain
from support import SitePackages, plugin_code

from oracle_core.testing.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # spawns `oracle ask` in a pseudo-terminal

ANSWER = "Fog rolls over the harbour tonight, thick enough to hide the lighthouse."


def env_for(fake_openai: FakeOpenAI, home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "OPENAI_"))}
    env.update(
        ORACLE_HOME=str(home),
        ORACLE_LOAD_PLUGINS="",
        ORACLE_MODEL="openai/fake-model",
        ORACLE_API_BASE=fake_openai.url,
        OPENAI_API_KEY="sk-fake",
        TERM="xterm",
    )
    env.update(extra)
    return env


def spawn(env: dict[str, str], *args: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "oracle_core", *args],
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 300),
    )


def piped(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``oracle ARGS`` with stdout and stderr pipes, not a terminal."""
    return subprocess.run(
        [sys.executable, "-m", "oracle_core", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def tides_env(
    site: SitePackages, fake_openai: FakeOpenAI, home: Path, last: Reply
) -> dict[str, str]:
    """A plugin ``tides`` the model loads and calls, then answers with ``last``."""
    site.add("oracle-plugin-tides", plugin_code("tides", tools=("get_tide",)), entry_point="tides")
    fake_openai.script(
        Reply.call("load_capability", {"names": ["tides"]}),
        Reply.call("get_tide", {"text": "Brest"}),
        last,
    )
    return env_for(fake_openai, home, ORACLE_LOAD_PLUGINS="tides", PYTHONPATH=str(site.root))


def finish(child: pexpect.spawn) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    shown = plain(child.before or "")
    child.close()
    return int(child.exitstatus or 0), shown


@pytest.mark.parametrize("client", ["auto", "litellm"])
def test_the_answer_streams_to_the_terminal_as_it_arrives(
    fake_openai: FakeOpenAI, tmp_path: Path, client: str
) -> None:
    pause = threading.Event()
    fake_openai.script(Reply(content=ANSWER, pause=pause))
    child = spawn(env_for(fake_openai, tmp_path, ORACLE_MODEL_CLIENT=client), "ask", "Weather?")
    try:
        # The server has sent the first piece only and waits: it is on the screen already.
        child.expect_exact(ANSWER[:8])
        assert ANSWER[8:16] not in plain(child.before or "")
    finally:
        pause.set()
    code, rest = finish(child)

    assert code == 0
    assert (ANSWER[:8] + rest).strip() == ANSWER
    assert fake_openai.requests[0].body["stream"] is True


def test_no_stream_waits_for_the_whole_answer(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.script(Reply.text(ANSWER))

    code, shown = finish(spawn(env_for(fake_openai, tmp_path), "ask", "--no-stream", "Weather?"))

    assert code == 0
    assert shown.strip() == ANSWER
    assert not fake_openai.requests[0].body.get("stream")


def test_output_to_a_pipe_is_the_whole_answer_once(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.script(Reply.text(ANSWER))

    result = piped(env_for(fake_openai, tmp_path), "ask", "Weather?")

    assert result.returncode == 0, result.stderr
    assert result.stdout == ANSWER + "\n"


def test_verbose_shows_each_tool_call_as_it_happens(
    site: SitePackages, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    before_answer = threading.Event()
    env = tides_env(site, fake_openai, tmp_path, Reply(content=ANSWER, hold=before_answer))
    child = spawn(env, "ask", "-v", "Tides in Brest?")
    try:
        # The tool's result is on the screen while the model has not answered yet.
        child.expect_exact("← get_tide:Brest")
        shown = plain(child.before or "")
    finally:
        before_answer.set()
    code, rest = finish(child)

    assert code == 0
    assert "→ load_capability" in shown and "⊕ loaded tides" in shown
    assert '→ get_tide({"text": "Brest"})' in shown
    assert ANSWER in rest


def test_verbose_lines_go_to_stderr_and_leave_stdout_the_answer(
    site: SitePackages, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    env = tides_env(site, fake_openai, tmp_path, Reply.text(ANSWER))

    result = piped(env, "ask", "-v", "Tides in Brest?")

    assert result.returncode == 0, result.stderr
    assert result.stdout == ANSWER + "\n"
    assert '→ get_tide({"text": "Brest"})' in result.stderr
    assert "\x1b[" not in result.stderr  # no colours for a pipe
