"""``oracle chat``: an interactive terminal conversation that shows tool calls as they happen."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import click

from oracle_core.cli.chat_approvals import settle
from oracle_core.cli.chat_input import LineReader, line_reader
from oracle_core.cli.chat_slash import ChatState, message_of, run_command
from oracle_core.cli.common import (
    api_base_option,
    api_key_option,
    key_option,
    model_call_options,
    model_option,
    run_options,
    talking_oracle,
    thread_option_of,
)
from oracle_core.cli.conversations import (
    CHAT_THREAD_PREFIX,
    latest_conversation,
    new_conversation,
)
from oracle_core.cli.notices import quiet_option, quieted, report_left_out
from oracle_core.cli.progress import Progress
from oracle_core.cli.run_flags import checked_options, run_flags
from oracle_core.cli.transcript import Transcript, status_of
from oracle_core.errors import OracleError
from oracle_core.values.events import Event, RunFinished

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle
    from oracle_core.values.run_options import RunOptions

PROMPT = "\nyou> "
"""What the chat prompts with."""


async def turn(
    oracle: Oracle,
    thread: str,
    message: str,
    *,
    verbose: bool,
    options: RunOptions | None = None,
) -> RunFinished | None:
    """Work ``message`` on ``thread`` and show it; Ctrl-C cancels the turn, not the chat.

    The run is saved as ``cancelled`` when cut short; its thread stays usable. ``options``
    are the run's own (the model-call settings of ``--max-tokens``, ``--timeout``,
    ``--retries``).

    Returns:
        The run's last event (``None`` when it was cancelled).
    """
    return await _shown(lambda: oracle.stream(thread, message, options=options), verbose=verbose)


async def _shown(
    events: Callable[[], AsyncIterator[Event]], *, verbose: bool
) -> RunFinished | None:
    """Show the events of a run as they come, with the thinking indicator; Ctrl-C cancels."""
    progress = Progress(sys.stderr, enabled=sys.stderr.isatty() and sys.stdout.isatty())

    def write(text: str) -> None:
        progress.hide()
        click.echo(text, nl=False)

    transcript = Transcript(write, verbose=verbose)
    finished: list[RunFinished] = []

    async def work() -> None:
        async for event in events():
            transcript.event(event)
            if isinstance(event, RunFinished):
                finished.append(event)
            status = status_of(event)
            if status is not None:
                transcript.end_text()
                progress.show(status)

    task = asyncio.create_task(work())
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):  # not on every platform
        loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        async with progress:
            progress.show("thinking...")
            await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
        transcript.end_text()
        click.echo(click.style("  ✗ cancelled (Ctrl-C); the thread is kept", fg="yellow"))
    except OracleError as error:  # the thread is busy elsewhere, the oracle is closed, ...
        transcript.end_text()
        click.echo(click.style(f"  ✗ {error}", fg="red"))
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
    return finished[-1] if finished else None


async def session(
    oracle: Oracle,
    reader: LineReader,
    thread: str | None,
    verbose: bool,
    options: RunOptions | None = None,
    *,
    quiet: bool = False,
) -> None:
    """The chat: read a line, run a slash command or a turn (each with ``options``), until
    the person leaves. It starts on ``thread``; ``None`` continues the latest conversation
    (``-c``), or starts a fresh one when there is none."""
    async with oracle:
        if thread is None:
            thread = await latest_conversation(oracle.checkpointer)
        state = ChatState(thread or new_conversation(CHAT_THREAD_PREFIX))
        click.echo(
            f"oracle chat on thread {state.thread!r} with {oracle.model.name}; "
            "/help for commands, /quit or Ctrl-D to leave."
        )
        report_left_out(oracle.registry.failures, quiet=quiet)
        while not state.quit:
            try:
                line = await reader.read(click.style(PROMPT, bold=True))
            except (EOFError, KeyboardInterrupt):
                click.echo()
                break
            message = message_of(line)
            if message is None:
                if line.strip():
                    await run_command(line, state, oracle.prompt_report)
                continue
            done = await turn(oracle, state.thread, message, verbose=verbose, options=options)
            await settle(oracle, reader, done, lambda events: _shown(events, verbose=verbose))


@click.command("chat")
@click.option(
    "-c",
    "--continue",
    "continue_latest",
    is_flag=True,
    help="Continue the most recent conversation started by `oracle chat` or `oracle ask`.",
)
@thread_option_of(None, "Continue the conversation of thread ID (made if new).", "ID")
@model_option
@run_flags
@api_base_option
@api_key_option
@key_option
@model_call_options
@click.option(
    "--verbose", "-v", is_flag=True, help="Also show each model call and its prompt tokens."
)
@quiet_option
def chat_command(
    continue_latest: bool,
    thread: str | None,
    model: str | None,
    system: str | None,
    options: tuple[tuple[str, str], ...],
    api_base: str | None,
    api_key: str | None,
    key_name: str | None,
    max_tokens: int | None,
    timeout: float | None,
    retries: int | None,
    verbose: bool,
    quiet: bool,
) -> None:
    """Talk with the oracle, with line editing and history.

    Each chat starts a fresh conversation (a thread named chat-<time>-<suffix>), as llm
    does; -c continues the most recent one started by chat or ask, --thread ID continues
    (or starts) thread ID.

    /help lists the commands; /quit, Ctrl-D, or Ctrl-C at the prompt leave. Ctrl-C while
    the oracle works cancels that turn. The history is kept in $ORACLE_HOME/chat_history.
    A plugin that failed to load is named on stderr, one line each (-q hides these lines).

    -m/--model, -s/--system and -o KEY VALUE are as for `oracle ask`. --max-tokens,
    --timeout and --retries set every turn's model calls, over oracle.toml's
    [models."<model>"] and the environment (docs/models.md).
    """
    if continue_latest and thread is not None:
        raise click.UsageError("give -c/--continue or --thread ID, not both")
    if thread is None and not continue_latest:
        thread = new_conversation(CHAT_THREAD_PREFIX)
    with quieted(quiet):
        oracle = talking_oracle(
            model=model, api_base=api_base, api_key=api_key, key_name=key_name, system=system
        )
        chosen = checked_options(oracle.model.name, options)
        reader = line_reader(oracle.settings.home)
        run = run_options(max_tokens, timeout, retries, chosen)
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(session(oracle, reader, thread, verbose, run, quiet=quiet))
