"""Reading the person's lines for ``oracle chat``: an editing prompt on a terminal, plain
lines from a pipe.

On a terminal, prompt_toolkit gives line editing (arrows, Ctrl-A/E, Ctrl-W, ...), history
across sessions (a file under ``ORACLE_HOME``) and searching it (Ctrl-R). Ctrl-C at the
prompt raises :class:`KeyboardInterrupt`, Ctrl-D on an empty line :class:`EOFError`. From a
pipe, lines are read as they come, so scripts can drive a chat.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Protocol

import click

HISTORY_FILE = "chat_history"
"""The file under ``ORACLE_HOME`` that keeps what was typed in ``oracle chat``."""


class LineReader(Protocol):
    """Where ``oracle chat`` reads the person's next line."""

    async def read(self, prompt: str) -> str:
        """The next line, without its newline.

        Raises:
            EOFError: the input has ended (Ctrl-D).
            KeyboardInterrupt: Ctrl-C at the prompt.
        """
        ...


class TerminalReader:
    """Lines typed at a prompt_toolkit prompt, with a history file.

    Args:
        history: the history file (its folder is created if missing); ``None``: in memory.
    """

    def __init__(self, history: Path | None) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory

        if history is not None:
            history.parent.mkdir(parents=True, exist_ok=True)
            history.touch(mode=0o600, exist_ok=True)  # what was typed is for its owner only
        self._session: PromptSession[str] = PromptSession(
            history=FileHistory(str(history)) if history is not None else InMemoryHistory(),
            enable_history_search=False,
        )

    async def read(self, prompt: str) -> str:
        """Prompt and read one edited line."""
        from prompt_toolkit.formatted_text import ANSI

        line: str = await self._session.prompt_async(ANSI(prompt), set_exception_handler=False)
        return line


class PipeReader:
    """Lines from standard input when it is not a terminal; the prompt and each line read are
    written, so the output reads as a transcript."""

    async def read(self, prompt: str) -> str:
        """Write ``prompt`` and read the next line of stdin."""
        click.echo(prompt, nl=False)  # click drops the colours on a pipe
        line: str = await asyncio.to_thread(sys.stdin.readline)
        if not line:
            raise EOFError
        line = line.rstrip("\n")
        click.echo(line)  # no terminal echoes it: the transcript shows what was said
        return line


def line_reader(home: Path) -> LineReader:
    """A :class:`TerminalReader` when stdin and stdout are terminals, else a :class:`PipeReader`."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return TerminalReader(home / HISTORY_FILE)
    return PipeReader()
