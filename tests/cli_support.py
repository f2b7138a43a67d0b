"""Helpers shared by the CLI tests: an in-process oracle command against the fake OpenAI server, and reading its output."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from click.testing import CliRunner, Result

from oracle_core.cli import main
from oracle_core.store.base import Checkpointer
from oracle_core.testing.openai_server import FakeOpenAI
from oracle_core.values.messages import Message
from oracle_core.values.threads import RunRecord


def model_env(home: Path, fake_openai: FakeOpenAI, **extra: str | None) -> dict[str, str | None]:
    """An environment for an in-process ``oracle`` that talks to ``fake_openai`` (a value
    of ``None`` unsets the variable)."""
    return {
        "ORACLE_HOME": str(home),
        "ORACLE_LOAD_PLUGINS": "",
        "ORACLE_MODEL": "openai/fake-model",
        "ORACLE_API_BASE": fake_openai.url,
        "OPENAI_API_KEY": "sk-fake",
        "ORACLE_API_KEY": None,
        "ORACLE_DATABASE_URL": None,
        **extra,
    }


def ask(
    home: Path, fake_openai: FakeOpenAI, *args: str, stdin: str = "", **extra: str | None
) -> Result:
    """``oracle ask ARGS`` in-process, standard input a pipe holding ``stdin``."""
    env = model_env(home, fake_openai, **extra)
    return CliRunner().invoke(main, ["ask", *args], env=env, input=stdin)


def run(home: Path, *args: str, **env: str) -> tuple[int, str, str]:
    """``oracle ARGS`` in process: (exit code, stdout, stderr)."""
    environ = {"ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": "", **env}
    result = CliRunner().invoke(main, list(args), env=environ, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def assert_one_clean_line(code: int, err: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("oracle: ")
    return lines[0]


def plain(text: str) -> str:
    """What the terminal shows of ``text``: a line erase wipes what came before it on its
    line (the progress indicator), then colours and cursor movements are dropped."""
    lines = [line.rsplit(_ERASE, 1)[-1] for line in text.split("\n")]
    return _ANSI.sub("", "\n".join(lines)).replace("\r", "")


def oracle(home: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    env = {"ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": ""}
    result = CliRunner().invoke(main, list(args), env=env, input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


_ERASE = "\r\x1b[2K"  # how the progress indicator clears its line


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]")


CONVERSATION: list[Message] = [
    {"role": "user", "content": "Weather in Porto?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_forecast", "arguments": '{"place": "Porto"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "rain"},
    {"role": "assistant", "content": "Rain in Porto."},
]


def save(store: Checkpointer, thread: str, messages: list[Message], *, run: bool = True) -> None:
    async def write() -> None:
        record = RunRecord(id=f"run-{thread}", thread_id=thread, status="completed")
        await store.append(
            thread, base=0, messages=messages, loaded=["fakecast"], run=record if run else None
        )

    asyncio.run(write())
