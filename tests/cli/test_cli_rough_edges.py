"""Small things the terminal said wrong (issue 36): a thread that does not exist shown as an
empty one, a failed run shown without its failure, token figures without saying whose."""

from __future__ import annotations

import random
import socket
import string
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from oracle_core.cli import main
from oracle_core.cli.demo import describe
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.events import UsageEvent
from oracle_core.values.messages import Usage


def oracle(home: Path, *args: str, **env: str | None) -> Result:
    environ: dict[str, str | None] = {
        "ORACLE_HOME": str(home),
        "ORACLE_LOAD_PLUGINS": "",
        "ORACLE_MODEL": "demo",
        "ORACLE_API_KEY": None,
        "ORACLE_DATABASE_URL": None,
        **env,
    }
    return CliRunner().invoke(main, list(args), env=environ, prog_name="oracle")


def _thread_id(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits + "._:@-"
    return rng.choice(string.ascii_letters) + "".join(
        rng.choice(alphabet) for _ in range(rng.randint(0, 30))
    )


@pytest.mark.parametrize("seed", range(5))
def test_prompt_for_a_thread_that_does_not_exist_is_an_error_naming_it(
    tmp_path: Path, seed: int
) -> None:
    thread = _thread_id(random.Random(seed))
    oracle(tmp_path, "ask", "--thread", "kept", "hello")  # the store has a thread, not this one

    result = oracle(tmp_path, "prompt", "--thread", thread)

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"oracle: no thread {thread!r} (oracle threads lists them")


def test_prompt_for_a_saved_thread_and_for_a_new_one_still_shows(tmp_path: Path) -> None:
    oracle(tmp_path, "ask", "--thread", "kept", "hello")

    saved = oracle(tmp_path, "prompt", "--thread", "kept")
    fresh = oracle(tmp_path / "fresh", "prompt")

    assert saved.exit_code == 0 and saved.stdout.startswith("Thread 'kept'")
    assert fresh.exit_code == 0 and fresh.stdout.startswith("Thread 'default'")


def _dead_url() -> str:
    probe = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    probe.close()
    return url


def test_threads_show_says_how_a_failed_run_ended_after_its_messages(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("First answer."), Reply.text("Third answer."))
    model = {"ORACLE_MODEL": "openai/fake-model", "OPENAI_API_KEY": "sk-fake"}
    oracle(tmp_path, "ask", "--thread", "t", "first", ORACLE_API_BASE=fake_openai.url, **model)
    failed = oracle(
        tmp_path, "ask", "--thread", "t", "--retries", "0", "second",
        ORACLE_API_BASE=_dead_url(), **model,
    )  # fmt: skip
    oracle(tmp_path, "ask", "--thread", "t", "third", ORACLE_API_BASE=fake_openai.url, **model)

    shown = oracle(tmp_path, "threads", "show", "t")

    assert failed.exit_code == 1
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("Thread 't': 6 messages, 3 runs")
    second = lines.index("user: second")
    assert lines[second + 1] == "assistant: (no answer)"
    assert lines[second + 2].startswith("  ✗ run run_")
    assert " failed: model call to 'openai/fake-model' failed: cannot connect" in lines[second + 2]
    assert lines[second + 3] == "user: third"
    assert lines[-1] == "assistant: Third answer."  # a completed run adds no line


def test_a_run_that_failed_last_says_so_at_the_end(tmp_path: Path) -> None:
    model = {"ORACLE_MODEL": "openai/fake-model", "OPENAI_API_KEY": "sk-fake"}
    oracle(
        tmp_path,
        "ask",
        "--thread",
        "t",
        "--retries",
        "0",
        "hi",
        ORACLE_API_BASE=_dead_url(),
        **model,
    )

    lines = oracle(tmp_path, "threads", "show", "t").stdout.splitlines()

    assert lines[1:3] == ["user: hi", "assistant: (no answer)"]
    assert lines[3].startswith("  ✗ run run_") and "cannot connect" in lines[3]


def test_the_demo_says_whose_count_each_usage_is() -> None:
    reported = describe(UsageEvent(usage=Usage(183, 39), step=1))
    estimated = describe(UsageEvent(usage=Usage(632, 4, estimated=True), step=1))

    assert reported is not None and estimated is not None
    assert "usage the provider reported: 183 prompt + 39 completion" in reported
    assert "differs from the oracle's count" in reported
    assert "usage: ~632 prompt + 4 completion, estimated (the model reported none" in estimated


@pytest.mark.parametrize("estimated", [False, True])
def test_a_chat_turn_marks_the_oracles_own_count(estimated: bool) -> None:
    from oracle_core.cli.transcript import Transcript
    from oracle_core.values.events import RunFinished

    written: list[str] = []
    transcript = Transcript(written.append)

    transcript.event(RunFinished("run_1", "completed", "Hi.", Usage(632, 4, estimated=estimated)))

    last = click_plain("".join(written)).splitlines()[-1]
    expected = "~632" if estimated else "632"
    assert (
        last == f"  [{'estimated: ' if estimated else ''}{expected} prompt + 4 completion tokens]"
    )


def click_plain(text: str) -> str:
    import click

    return click.unstyle(text)


def test_ask_counts_only_the_last_steps_text_as_the_streamed_answer() -> None:
    import io

    from oracle_core.cli.ask_view import AskView
    from oracle_core.cli.progress import Progress
    from oracle_core.values.events import ModelCallStarted, TextDelta, ToolCallEvent

    out, err = io.StringIO(), io.StringIO()
    view = AskView(Progress(err, enabled=False), out, err)

    view.event(ModelCallStarted(step=1, tools=[]))
    view.event(TextDelta("Let me check."))
    view.event(ToolCallEvent(id="c1", name="get_tide", arguments="{}"))
    streamed_first = view.streamed
    view.event(ModelCallStarted(step=2, tools=[]))  # a last step that streamed nothing

    assert streamed_first is True
    assert view.streamed is False  # so ask prints the answer whole
    assert out.getvalue() == "Let me check.\n"  # the line was ended before the tool ran
