"""Approvals asked inline in ``oracle chat``: the exact call, then ``[y/N]`` (``n`` may
give a reason; Enter denies, with no reason), and the run resumes (``Oracle.decide``) and
is shown like any turn."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import click

from oracle_core.cli.chat_input import LineReader
from oracle_core.errors import OracleError
from oracle_core.values.events import Event, RunFinished

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle

Show = Callable[[Callable[[], AsyncIterator[Event]]], Awaitable[RunFinished | None]]
"""Shows a run's events (from a function that gives them) and returns its last event."""


async def settle(oracle: Oracle, reader: LineReader, done: RunFinished | None, show: Show) -> None:
    """Ask the person, inline, to decide each approval the run waits for, and resume it.

    The resumed run is shown like any turn; if it waits again, the person is asked again.
    A connection wait is shown with the command that supplies it (the chat does not read
    secrets). Ctrl-C or Ctrl-D at the question leaves the approval open for later
    (``oracle operations approve ID``).

    Args:
        oracle: the oracle the run is on.
        reader: where the person's answer is read.
        done: the last event of the run just shown.
        show: shows a run's events and returns its last one (as a turn is shown).
    """
    while done is not None and done.status == "waiting_for_approval":
        approvals = [op for op in done.operations if op.get("kind") == "approval"]
        if not approvals:
            return
        operation = approvals[0]
        try:
            answer = await reader.read(approval_question(operation))
        except (EOFError, KeyboardInterrupt):
            click.echo(f"\n  left open: oracle operations approve|deny {operation['id']}")
            return
        approve, reason = parse_decision(answer)
        try:
            result = await oracle.decide(operation["id"], approve=approve, reason=reason)
        except OracleError as error:  # decided meanwhile elsewhere, or its tool is gone
            click.echo(click.style(f"  ✗ {error}", fg="red"))
            return
        done = await show(_replay(result.events))
    if done is not None and done.status == "waiting_for_connection":
        for operation in done.operations:
            if operation.get("kind") == "connection":
                name = operation.get("details", {}).get("connection", "?")
                click.echo(
                    f"  waiting for connection {name!r} of plugin {operation.get('plugin')!r}: "
                    f"oracle connections set {operation.get('plugin')} {name}"
                )


def approval_question(operation: dict[str, Any]) -> str:
    """The inline question for an approval: the exact call, why it waits, how to answer."""
    arguments = json.dumps(operation.get("arguments"), ensure_ascii=False)
    why = f"\n  why: {operation['reason']}" if operation.get("reason") else ""
    return (
        f"\n  ? approve {operation.get('tool')}({arguments})?{why}\n"
        "  [y/N] (Enter denies; a reason may follow: n not today) > "
    )


def parse_decision(answer: str) -> tuple[bool, str]:
    """``y``/``yes`` approves; anything else, Enter included, denies (click's ``[y/N]``).

    The words after the first are the person's reason; with none it is ``""``, which
    replaces the approval's own "why" (kept when ``None`` is given), so the model is never
    told that text as if the person had said it.
    """
    word, _, reason = answer.strip().partition(" ")
    return word.lower() in ("y", "yes"), reason.strip()


def _replay(events: list[Event]) -> Callable[[], AsyncIterator[Event]]:
    async def replay() -> AsyncIterator[Event]:
        for event in events:
            yield event

    return replay
