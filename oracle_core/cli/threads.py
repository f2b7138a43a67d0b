"""``oracle threads``: list, show, export and delete the saved conversations."""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from oracle_core.cli.common import echo_json, iso_time, json_option, table, thread_argument
from oracle_core.cli.run_openings import run_openings
from oracle_core.cli.store_access import with_store
from oracle_core.cli.transcript import shorten
from oracle_core.models.wire import calls_of
from oracle_core.values.attachments import content_text
from oracle_core.values.messages import Message, public_message

if TYPE_CHECKING:
    from oracle_core.store.base import Checkpointer

_DELETE_LEASE_SECONDS = 30.0


def when(timestamp: float, now: float | None = None) -> str:
    """A time as people read it in a listing: ``3 min ago``, ``yesterday 14:02``, a date."""
    now = time.time() if now is None else now
    ago = now - timestamp
    if timestamp <= 0:
        return "-"
    if 0 <= ago < 60:
        return "just now"
    if 0 <= ago < 3600:
        return f"{int(ago // 60)} min ago"
    if 0 <= ago < 86400:
        return f"{int(ago // 3600)} h ago"
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def size_text(tokens: int) -> str:
    """A thread's size: the tokens of its messages as the next model call sends them."""
    return f"{tokens} tokens"


def used_text(usage: dict[str, Any]) -> str:
    """Tokens used: what the provider reported for the thread's model calls, summed."""
    return f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion tokens"


async def _export(store: Checkpointer, thread_id: str) -> dict[str, Any] | None:
    state = await store.load(thread_id)
    empty = not (state.messages or state.runs or state.loaded_plugins)
    if empty and thread_id not in await store.threads():
        return None
    return {
        "thread_id": thread_id,
        "loaded_plugins": state.loaded_plugins,
        "messages": [public_message(m) for m in state.messages],
        "message_tokens": state.message_tokens,
        "runs": [r.to_json() for r in state.runs],
        "usage": state.usage.as_dict(),
    }


def _not_found(thread_id: str) -> None:
    click.echo(f"oracle: no thread {thread_id!r} (oracle threads lists them)", err=True)
    sys.exit(1)


def message_lines(message: Message, limit: int = 400) -> list[str]:
    """One saved message as it reads in ``oracle threads show`` (an assistant message with
    neither text nor tool calls, as a failed run leaves, reads ``(no answer)``)."""
    role = message.get("role", "?")
    lines = []
    if role == "assistant" and not message.get("content") and not message.get("tool_calls"):
        lines.append(f"{click.style(role + ':', bold=True)} {click.style('(no answer)', dim=True)}")
    if message.get("content"):
        text = content_text(message["content"])  # attached images read as [image]
        if role == "tool":
            lines.append(click.style(f"  ← {shorten(text, limit)}", fg="green"))
        else:
            lines.append(f"{click.style(role + ':', bold=True)} {text}")
    for call in calls_of(message):
        line = f"  → {call.name}({shorten(call.arguments, limit)})"
        lines.append(click.style(line, fg="cyan"))
    return lines


@click.group("threads", invoke_without_command=True)
@click.option("--limit", "-n", default=50, show_default=True, type=click.IntRange(min=1))
@json_option
@click.pass_context
def threads_group(ctx: click.Context, limit: int, as_json: bool) -> None:
    """List saved threads, most recent first, with their last activity and size.

    SIZE is the tokens of the thread's messages (what the next model call carries besides
    the system prompt and tools); `threads show` adds the tokens used, as the provider
    reported them over every run (each call re-sends the history, so it grows faster).
    `oracle threads show ID`, `export ID` and `delete ID` work on one thread.
    """
    if ctx.invoked_subcommand is not None:
        return
    summaries = with_store(lambda store: store.thread_summaries(limit=limit))
    if as_json:
        echo_json([s.to_json() for s in summaries])
        return
    if not summaries:
        click.echo("No threads yet: `oracle ask` or `oracle chat` make one.")
        return
    rows = [
        [s.thread_id, when(s.updated_at), str(s.messages), size_text(s.tokens), str(s.runs)]
        for s in summaries
    ]
    click.echo(table(rows, ["THREAD", "LAST ACTIVITY", "MESSAGES", "SIZE", "RUNS"]))


@threads_group.command("show")
@thread_argument
@json_option
def show_command(thread_id: str, as_json: bool) -> None:
    """Show thread ID: its messages, tool calls, loaded plugins, size and tokens used, and
    which of its runs another process finished after the one running them died."""
    data = with_store(lambda store: _export(store, thread_id))
    if data is None:
        _not_found(thread_id)
        return
    if as_json:
        echo_json(data)
        return
    usage = data["usage"]
    click.echo(
        f"Thread {thread_id!r}: {len(data['messages'])} messages, {len(data['runs'])} runs, "
        f"loaded: {', '.join(data['loaded_plugins']) or 'nothing'}; "
        f"size {size_text(sum(data['message_tokens']))}; used {used_text(usage)}"
    )
    resumed = [r for r in data["runs"] if r.get("resumed")]
    for run in resumed:  # finished by another process after the one running it died
        times = "once" if run["resumed"] == 1 else f"{run['resumed']} times"
        click.echo(
            f"run {run['id']} was resumed {times} after its process stopped, last at "
            f"{iso_time(run.get('resumed_at'))} ({run['status']})"
        )
    for line in conversation_lines(data["messages"], data["runs"]):
        click.echo(line)


def outcome_line(run: dict[str, Any]) -> str | None:
    """How a run that did not complete ended, as one line (``None`` for a completed run)."""
    status = str(run.get("status"))
    if status == "completed":
        return None
    if status.startswith("waiting_for_") or status == "running":
        return click.style(f"  ⏸ run {run['id']} {status}", fg="yellow")
    error = f": {run['error']}" if run.get("error") else ""
    return click.style(f"  ✗ run {run['id']} {status}{error}", fg="red")


def conversation_lines(messages: list[Message], runs: list[dict[str, Any]]) -> list[str]:
    """The messages as they read, each run that did not complete saying how it ended after
    its own messages (at the end when runs cannot be matched to messages)."""
    openings = run_openings(messages, len(runs))
    ends = {index: runs[number - 1] for number, index in enumerate(openings or []) if number}
    lines: list[str] = []
    for index, message in enumerate(messages):
        if index in ends and (line := outcome_line(ends[index])) is not None:
            lines.append(line)
        lines += message_lines(message)
    unmatched = runs if openings is None else runs[-1:]
    lines += [line for run in unmatched if (line := outcome_line(run)) is not None]
    return lines


@threads_group.command("export")
@thread_argument
def export_command(thread_id: str) -> None:
    """Print thread ID as one JSON document (messages, loaded plugins, runs, usage)."""
    data = with_store(lambda store: _export(store, thread_id))
    if data is None:
        _not_found(thread_id)
        return
    echo_json(data)


@threads_group.command("delete")
@thread_argument
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def delete_command(thread_id: str, yes: bool) -> None:
    """Delete thread ID and everything saved for it (it cannot be undone).

    It asks first on a terminal; elsewhere (a script, a pipe) it needs --yes. A thread with a run in progress (in any process sharing the store) is not deleted.
    """
    if not yes:
        if not sys.stdin.isatty():  # nobody to ask: a script must say so itself
            click.echo(
                f"oracle: not deleting thread {thread_id!r}: standard input is not a terminal, "
                "so there is nobody to confirm; pass --yes to delete it",
                err=True,
            )
            sys.exit(2)
        click.confirm(f"Delete thread {thread_id!r} for good?", abort=True)

    async def delete(store: Checkpointer) -> str:
        owner = f"oracle-threads-delete:{os.getpid()}"
        if not await store.acquire(thread_id, owner, _DELETE_LEASE_SECONDS):
            return "busy"
        try:
            return "deleted" if await store.delete(thread_id) else "missing"
        finally:
            await store.release(thread_id, owner)

    outcome = with_store(delete)
    if outcome == "missing":
        _not_found(thread_id)
    if outcome == "busy":
        click.echo(
            f"oracle: thread {thread_id!r} has a run in progress; delete it once the run ends",
            err=True,
        )
        sys.exit(1)
    click.echo(f"Deleted thread {thread_id!r}.")
