"""``oracle chat`` in a pseudo-terminal (pexpect), against the fake OpenAI server.

What a person at a terminal sees: line editing and history, slash commands handled
locally, Ctrl-C cancelling a turn (and quitting at the prompt), Ctrl-D quitting, the
answer on its own line and a thinking indicator while the model works. No sleeps: the test
waits for what the terminal shows, or for the request to reach the fake server.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from cli_support import plain
from support import SitePackages, plugin_code

from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest

pytestmark = pytest.mark.slow  # spawns `oracle chat` in a pseudo-terminal

PROMPT = "you>"
TURN_END = r"completion tokens\]"


class Chat:
    """An `oracle chat` process in a pseudo-terminal, with what it printed so far."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "oracle_core", "chat", *args],
            env=env,
            encoding="utf-8",
            timeout=60,
            dimensions=(50, 200),
        )
        self.seen = ""

    def expect(self, pattern: str) -> str:
        """Wait until ``pattern`` (a regex) is printed; the text printed before it."""
        self.child.expect(pattern)
        before = plain(self.child.before or "")
        self.seen += before + plain(str(self.child.after))
        return before

    def say(self, text: str, until: str = TURN_END) -> str:
        """Type ``text``, press Enter; what was printed up to ``until`` and the next prompt.

        The prompt is redrawn as one types, so the end of the reply is recognised by
        ``until`` (by default the token line that ends every turn) before the prompt.
        """
        self.child.send(text + "\r")
        shown = self.expect(until)
        shown += str(self.child.after)
        return shown + self.expect(PROMPT)

    def wait_exit(self) -> int:
        """Wait for the process to end; its exit status."""
        self.child.expect(pexpect.EOF)
        self.seen += plain(self.child.before or "")
        self.child.close()
        assert self.child.signalstatus is None, f"killed by signal {self.child.signalstatus}"
        return int(self.child.exitstatus or 0)


@pytest.fixture
def chat_env(site: SitePackages, fake_openai: FakeOpenAI) -> dict[str, str]:
    site.add(
        "oracle-plugin-fakecast",
        plugin_code("fakecast", tools=("get_forecast",)),
        entry_point="fakecast",
    )
    return {
        **os.environ,
        "PYTHONPATH": str(site.root),
        "ORACLE_HOME": str(site.root / "home"),
        "ORACLE_LOAD_PLUGINS": "fakecast",
        "ORACLE_MODEL": "openai/fake-model",
        "ORACLE_API_BASE": fake_openai.url,
        "OPENAI_API_KEY": "sk-fake",
        "TERM": "xterm",
        "PROMPT_TOOLKIT_NO_CPR": "1",  # pexpect answers no cursor-position requests
    }


@pytest.fixture
def chat(chat_env: dict[str, str]) -> Iterator[Chat]:
    session = Chat(chat_env, "--thread", "c1")
    session.expect(PROMPT)
    yield session
    if session.child.isalive():
        session.child.terminate(force=True)


def user_texts(server: FakeOpenAI) -> list[str]:
    """The last user message of every request the fake server got."""
    return [
        next(m["content"] for m in reversed(r.messages) if m["role"] == "user")
        for r in server.requests
    ]


def test_line_editing_backspace_and_home_change_what_is_sent(
    chat: Chat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Fine."))

    chat.child.send("Weather in Oslx")
    chat.child.send("\x7f")  # backspace
    chat.child.send("o?")
    chat.child.send("\x01")  # Ctrl-A: to the start of the line
    chat.say("Hi. ")

    assert user_texts(fake_openai) == ["Hi. Weather in Oslo?"]


def test_history_is_kept_across_sessions_and_up_recalls_it(
    chat_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("one"), Reply.text("two"))
    first = Chat(chat_env, "--thread", "h1")
    first.expect(PROMPT)
    first.say("remember this line")
    first.child.sendeof()
    assert first.wait_exit() == 0

    second = Chat(chat_env, "--thread", "h2")
    second.expect(PROMPT)
    second.child.send("\x1b[A")  # arrow up
    second.say("")
    second.child.sendeof()
    second.wait_exit()

    assert user_texts(fake_openai) == ["remember this line", "remember this line"]
    history = Path(chat_env["ORACLE_HOME"]) / "chat_history"
    assert "remember this line" in history.read_text()


def test_slash_commands_are_handled_locally_and_never_sent(
    chat: Chat, fake_openai: FakeOpenAI
) -> None:
    helped = chat.say("/help", "begins with /")
    thread = chat.say("/thread", "thread: c1")
    unknown = chat.say("/frobnicate now", "begins with /")
    fresh = chat.say("/new", "new thread 'chat-[0-9a-f]+'")
    switched = chat.say("/thread other-1", "now on thread")
    bad = chat.say("/thread -nope", "is not valid")
    tokens = chat.say("/tokens", "messages \\d+")

    assert fake_openai.requests == []
    assert "/tokens" in helped and "/new" in helped and "Ctrl-C" in helped
    assert "thread: c1" in thread
    assert "unknown command /frobnicate (not sent to the model)" in unknown
    assert "/quit" in unknown  # the help follows
    assert re.search(r"new thread 'chat-[0-9a-f]{10}'", fresh)
    assert "now on thread 'other-1'" in switched
    assert "is not valid" in bad
    assert "thread 'other-1': 0 prompt + 0 completion tokens so far" in tokens
    assert re.search(r"next call: \d+ prompt tokens = Tier-1 \d+ \+ meta-tools \d+", tokens)


def test_a_double_slash_sends_a_message_that_starts_with_a_slash(
    chat: Chat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("It is a path."))

    chat.say("//etc/hosts is what?")

    assert user_texts(fake_openai) == ["/etc/hosts is what?"]


def test_the_answer_starts_its_own_line_after_the_tool_lines(
    chat: Chat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply.call("load_capability", {"names": ["fakecast"]}),
        Reply.call("get_forecast", {"text": "Oslo"}),
        Reply.text("Snow in Oslo."),
    )

    shown = chat.say("Weather in Oslo?")

    lines = [line.strip() for line in shown.splitlines() if line.strip()]
    result = next(i for i, line in enumerate(lines) if line.startswith("← get_forecast:Oslo"))
    assert lines[result] == "← get_forecast:Oslo"
    assert lines[result + 1] == "oracle> Snow in Oslo."
    assert re.fullmatch(r"\[\d+ prompt \+ \d+ completion tokens\]", lines[result + 2])
    assert lines.index('→ load_capability({"names": ["fakecast"]})') < result


def test_text_before_a_tool_call_ends_its_line_before_the_tool_line(
    chat: Chat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply(content="Let me load it.", tool_calls=[("load_capability", {"names": ["fakecast"]})]),
        Reply.text("Loaded."),
    )

    shown = chat.say("load it")

    lines = [line.strip() for line in shown.splitlines() if line.strip()]
    first = lines.index("oracle> Let me load it.")
    assert lines[first + 1] == '→ load_capability({"names": ["fakecast"]})'
    assert "oracle> Loaded." in lines


def test_ctrl_c_cancels_the_turn_shows_thinking_and_the_chat_goes_on(
    chat: Chat, fake_openai: FakeOpenAI
) -> None:
    arrived, release = threading.Event(), threading.Event()

    def slow(request: SeenRequest) -> Reply:
        arrived.set()
        return Reply(content="too late", hold=release)

    fake_openai.script(slow, Reply.text("Back again."))
    try:
        chat.child.send("take your time\r")
        chat.expect("thinking")
        assert arrived.wait(30)
        chat.child.sendintr()
        cancelled = chat.expect(PROMPT)
    finally:
        release.set()
    after = chat.say("still there?")

    assert "cancelled (Ctrl-C)" in cancelled
    assert "Traceback" not in chat.seen
    assert "oracle> Back again." in after
    assert user_texts(fake_openai) == ["take your time", "still there?"]
    assert chat.child.isalive()


def test_ctrl_c_at_the_prompt_quits_cleanly(chat: Chat) -> None:
    chat.child.sendintr()

    assert chat.wait_exit() == 0
    assert "Traceback" not in chat.seen


def test_ctrl_d_and_quit_leave_with_status_0(chat_env: dict[str, str], chat: Chat) -> None:
    chat.child.sendeof()
    assert chat.wait_exit() == 0

    other = Chat(chat_env)
    other.expect(PROMPT)
    other.child.send("/quit\r")
    assert other.wait_exit() == 0
    assert "Traceback" not in chat.seen + other.seen


def test_chat_without_a_model_says_how_to_set_one(chat_env: dict[str, str]) -> None:
    env = {k: v for k, v in chat_env.items() if k != "ORACLE_MODEL"}

    session = Chat(env)

    assert session.wait_exit() == 2
    assert "no model is configured: set ORACLE_MODEL" in session.seen
    assert "--model demo" in session.seen


APPROVAL_PLUGIN = '''
from oracle_core import PluginManifest, hookimpl, tool

@tool(approval=True)
def send_money(to: str, amount: int) -> str:
    """Send money to someone."""
    return f"sent {amount} to {to}"

@hookimpl
def oracle_manifest():
    return PluginManifest(name="bank", summary="Money.", when_to_use=["pay"], visibility="always")

@hookimpl
def oracle_tools():
    return [send_money]
'''


@pytest.fixture
def bank_chat(site: SitePackages, chat_env: dict[str, str]) -> Iterator[Chat]:
    site.add("oracle-plugin-bank", APPROVAL_PLUGIN, entry_point="bank")
    session = Chat({**chat_env, "ORACLE_LOAD_PLUGINS": "bank"}, "--thread", "pay")
    session.expect(PROMPT)
    yield session
    if session.child.isalive():
        session.child.terminate(force=True)


@pytest.mark.parametrize(
    ("answer", "tool_result"),
    [("y", "sent 5 to ada"), ("n not today", "declined"), ("", "declined")],
)
def test_an_approval_is_asked_inline_and_the_run_resumes(
    bank_chat: Chat, fake_openai: FakeOpenAI, answer: str, tool_result: str
) -> None:
    fake_openai.script(Reply.call("send_money", {"to": "ada", "amount": 5}), Reply.text("Done."))

    bank_chat.child.send("pay ada 5\r")
    asked = bank_chat.expect(r"\[y/N\]")
    bank_chat.child.send(answer + "\r")
    after = bank_chat.expect(TURN_END)

    assert 'approve send_money({"amount": 5, "to": "ada"})?' in asked
    assert "waiting for approval (" in asked
    assert "Traceback" not in asked + after
    assert "oracle> Done." in after
    tool_message = next(m for m in fake_openai.requests[1].messages if m["role"] == "tool")
    assert tool_result in tool_message["content"]
    if answer.startswith("n"):
        assert "not today" in tool_message["content"]
    if answer == "":  # Enter denies, and the approval's own "why" is not told as a reason
        assert "Reason" not in tool_message["content"]
        assert "needs a person's approval" not in tool_message["content"]


def test_from_a_pipe_the_chat_reads_as_a_plain_transcript(
    chat_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Hello."))

    result = subprocess.run(
        [sys.executable, "-m", "oracle_core", "chat"],
        env=chat_env, input="hi there\n/thread\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "\x1b[" not in result.stdout  # no colours or cursor moves on a pipe
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines[1:] == [
        "you> hi there", "oracle> Hello.", lines[3], "you> /thread", lines[5], "you> ",
    ]  # fmt: skip
    assert lines[3].startswith("  [") and lines[3].endswith("completion tokens]")
    assert re.fullmatch(r"thread: chat-\d{8}-\d{6}-[0-9a-f]{6}", lines[5])  # a fresh one
