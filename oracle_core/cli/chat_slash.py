"""The slash commands of ``oracle chat``, handled in the terminal and never sent to the model."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click

from oracle_core.errors import InvalidThreadIdError
from oracle_core.values.ids import check_thread_id

HELP = """Commands (never sent to the model):
  /help          this help
  /thread [ID]   show the thread, or switch to thread ID
  /new           start a new thread
  /tokens        tokens used on this thread, and what the next call would cost
  /quit, /exit   leave (so do Ctrl-D, and Ctrl-C at the prompt)
Ctrl-C while the oracle works cancels that turn. Start a message with // to send a
message that begins with /."""
"""What ``/help`` prints."""


@dataclass
class ChatState:
    """What the slash commands read and change.

    Attributes:
        thread: the thread the next message goes to.
        quit: set by ``/quit``: the chat ends.
    """

    thread: str
    quit: bool = False
    echo: Callable[[str], None] = field(default=click.echo, repr=False)


def new_thread_id() -> str:
    """A fresh thread id for ``/new``."""
    return f"chat-{uuid.uuid4().hex[:10]}"


def message_of(line: str) -> str | None:
    """The message to send for ``line``, or ``None`` when it is a slash command or empty.

    ``//text`` sends ``/text``.
    """
    text = line.strip()
    if not text:
        return None
    if text.startswith("//"):
        return text[1:]
    if text.startswith("/"):
        return None
    return line


def tokens_text(report: dict[str, Any]) -> str:
    """``/tokens``: the thread's use so far and the next call's prompt, split by kind."""
    usage, tokens = report["thread_usage"], report["tokens"]
    return (
        f"thread {report['thread_id']!r}: {usage['prompt_tokens']} prompt + "
        f"{usage['completion_tokens']} completion tokens so far\n"
        f"next call: {tokens['total']} prompt tokens = Tier-1 {tokens['tier1']} + meta-tools "
        f"{tokens['meta_tools']} + tool schemas {tokens['tool_schemas']} + messages "
        f"{tokens['messages']}"
    )


async def run_command(line: str, state: ChatState, report: Callable[[str], Any]) -> None:
    """Handle the slash command ``line`` (unknown ones print the help).

    Args:
        line: what was typed, starting with ``/``.
        state: the chat's thread and quit flag.
        report: ``await report(thread)`` gives the thread's prompt report (for ``/tokens``).
    """
    name, _, argument = line.strip().partition(" ")
    argument = argument.strip()
    if name in ("/quit", "/exit", "/q"):
        state.quit = True
    elif name == "/help":
        state.echo(HELP)
    elif name == "/thread":
        if not argument:
            state.echo(f"thread: {state.thread}")
            return
        try:
            state.thread = check_thread_id(argument)
        except InvalidThreadIdError as error:
            state.echo(click.style(str(error), fg="red"))
            return
        state.echo(f"now on thread {state.thread!r}")
    elif name == "/new":
        state.thread = new_thread_id()
        state.echo(f"new thread {state.thread!r}")
    elif name == "/tokens":
        state.echo(tokens_text(await report(state.thread)))
    else:
        state.echo(click.style(f"unknown command {name} (not sent to the model)", fg="yellow"))
        state.echo(HELP)
