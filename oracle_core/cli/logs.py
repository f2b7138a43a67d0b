"""``oracle logs``: the most recent runs across threads, with model, tokens and duration."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from oracle_core.cli.common import echo_json, iso_time, json_option, table, thread_option_of
from oracle_core.cli.run_openings import message_text, run_openings
from oracle_core.cli.store_access import with_store
from oracle_core.cli.transcript import shorten

if TYPE_CHECKING:
    from oracle_core.store.base import Checkpointer
    from oracle_core.values.messages import Usage
    from oracle_core.values.threads import RunRecord, ThreadState

_MESSAGE_WIDTH = 50
_ERROR_WIDTH = 200


@dataclass(frozen=True)
class LoggedRun:
    """One run as ``oracle logs`` lists it: its record and the user's message that opened it.

    Attributes:
        record: the run's record.
        message: the user's message that opened it; ``None`` when it cannot be told.
    """

    record: RunRecord
    message: str | None

    @property
    def duration(self) -> float:
        """Seconds from its start to its last save."""
        return max(0.0, self.record.updated_at - self.record.created_at)

    def to_json(self) -> dict[str, Any]:
        """The run as ``oracle logs --json`` prints it: its record, duration and message."""
        return {**self.record.to_json(), "duration": self.duration, "message": self.message}


def _messages_of_runs(state: ThreadState) -> list[str | None]:
    """The user's message of each of ``state.runs``, aligned with them (``None`` each when
    the match cannot be told: :func:`~oracle_core.cli.run_openings.run_openings`)."""
    openings = run_openings(state.messages, len(state.runs))
    if openings is None:
        return [None] * len(state.runs)
    return [message_text(state.messages[index]) for index in openings]


def _logged(state: ThreadState) -> list[LoggedRun]:
    return [
        LoggedRun(run, message)
        for run, message in zip(state.runs, _messages_of_runs(state), strict=True)
    ]


def _newest(runs: list[LoggedRun], count: int) -> list[LoggedRun]:
    ordered = sorted(runs, key=lambda r: r.record.created_at, reverse=True)
    return ordered[:count] if count else ordered


def _everything(run: LoggedRun) -> bool:
    return True


async def recent_runs(
    store: Checkpointer,
    count: int,
    thread_id: str | None = None,
    keep: Callable[[LoggedRun], bool] = _everything,
) -> list[LoggedRun] | None:
    """The ``count`` most recent runs (0: all) that ``keep`` keeps, newest first; ``None``
    for an unknown thread.

    Threads are read most recently updated first, and reading stops once ``count`` runs
    started after the next thread's last update are found: none of its runs can be newer.
    """
    if thread_id is not None:
        state = await store.load(thread_id)
        if not (state.runs or state.messages) and thread_id not in await store.threads():
            return None
        return _newest([r for r in _logged(state) if keep(r)], count)
    found: list[LoggedRun] = []
    for summary in await store.thread_summaries():
        full = count and len(found) >= count
        if full and _newest(found, count)[-1].record.created_at >= summary.updated_at:
            break
        found += [r for r in _logged(await store.load(summary.thread_id)) if keep(r)]
    return _newest(found, count)


async def current_thread(store: Checkpointer) -> str | None:
    """The thread of the most recent conversation (``logs -c``): that of the newest run."""
    newest = await recent_runs(store, 1)
    return newest[0].record.thread_id if newest else None


def duration_text(seconds: float) -> str:
    """A run's duration as people read it: ``850ms``, ``4.2s``, ``3m05s``."""
    if seconds < 1:
        return f"{int(seconds * 1000)}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


ESTIMATE_MARK = "~"
"""What marks token figures that are the oracle's own count, not the provider's."""

ESTIMATE_NOTE = (
    f"{ESTIMATE_MARK}: the oracle's own count (o200k_base); the provider reported none for "
    "some of the run's model calls"
)


def tokens_text(usage: Usage) -> str:
    """A run's tokens as ``prompt + completion``; an estimate starts with ``~``."""
    mark = ESTIMATE_MARK if usage.estimated else ""
    return f"{mark}{usage.prompt_tokens} + {usage.completion_tokens}"


def _first_line(run: LoggedRun) -> str | None:
    first_line = (run.message or "").strip().splitlines()[:1]
    return first_line[0] if first_line else None


def _row(run: LoggedRun) -> list[str]:
    record = run.record
    first_line = _first_line(run)
    return [
        iso_time(record.created_at),
        record.thread_id,
        record.id,
        record.status,
        record.model or "-",
        tokens_text(record.usage),
        str(record.steps),
        duration_text(run.duration),
        shorten(first_line, _MESSAGE_WIDTH) if first_line else "-",
    ]


def short_text(runs: list[LoggedRun]) -> str:
    """``--short``: one YAML entry a run (model, time, thread, run, status, the first line
    of its message), as ``llm logs --short`` lists them."""
    lines: list[str] = []
    for run in runs:
        record = run.record
        fields = {
            "model": record.model,
            "datetime": iso_time(record.created_at),
            "thread": record.thread_id,
            "run": record.id,
            "status": record.status,
            "prompt": _first_line(run),
        }
        for index, (key, value) in enumerate(fields.items()):
            lead = "- " if index == 0 else "  "
            lines.append(f"{lead}{key}: {json.dumps(value, ensure_ascii=False)}")
    return "\n".join(lines)


@click.command("logs")
@click.option(
    "--count",
    "-n",
    default=10,
    show_default=True,
    type=click.IntRange(min=0),
    help="How many runs to list; 0 lists every one.",
)
@click.option(
    "--current",
    "-c",
    is_flag=True,
    help="Only the runs of the most recent conversation (the thread of the newest run).",
)
@thread_option_of(None, "Only the runs of thread ID.", metavar="ID")
@click.option(
    "--model", "-m", metavar="MODEL", help="Only the runs that called MODEL (or its alias)."
)
@click.option("--short", "-s", is_flag=True, help="One short YAML entry a run.")
@json_option
def logs_command(
    count: int, current: bool, thread: str | None, model: str | None, short: bool, as_json: bool
) -> None:
    """List the most recent runs across threads, newest first.

    Each run shows when it started (local time), its thread, its id and status, the model it
    called ("-" for runs saved before the model was recorded), the tokens the provider
    reported (prompt + completion, summed over its model calls; "~" marks the oracle's own
    count where the provider reported none), its model calls (STEPS), how long it took
    (start to last save), and the first line of the user's message that opened it. A
    failed run's error follows the table. `oracle threads show ID` shows a whole thread.

    -c lists the runs of the most recent conversation, --thread ID those of one thread,
    -m MODEL those that called MODEL; --short prints one YAML entry a run and --json the
    whole records (as `llm logs` does).
    """
    if current and thread is not None:
        raise click.UsageError("give -c/--current or --thread ID, not both")
    wanted = _model_named(model) if model is not None else None

    def keep(run: LoggedRun) -> bool:
        return wanted is None or run.record.model == wanted

    async def read(store: Checkpointer) -> list[LoggedRun] | None:
        chosen = await current_thread(store) if current else thread
        if current and chosen is None:
            return []
        return await recent_runs(store, count, chosen, keep)

    runs = with_store(read)
    if runs is None:
        click.echo(f"oracle: no thread {thread!r} (oracle threads lists them)", err=True)
        raise SystemExit(1)
    if as_json:
        echo_json([run.to_json() for run in runs])
        return
    if not runs:
        click.echo(_NONE if wanted is None else f"No runs of {wanted} yet.")
        return
    if short:
        click.echo(short_text(runs))
        return
    headers = ["WHEN", "THREAD", "RUN", "STATUS", "MODEL", "TOKENS", "STEPS", "DURATION"]
    click.echo(table([_row(run) for run in runs], [*headers, "MESSAGE"]))
    if any(run.record.usage.estimated for run in runs):
        click.echo(ESTIMATE_NOTE)
    failures = [run.record for run in runs if run.record.error]
    if failures:
        click.echo()
    for record in failures:
        click.echo(f"{record.id} {record.status}: {shorten(record.error or '', _ERROR_WIDTH)}")


_NONE = "No runs yet: `oracle ask` or `oracle chat` make one."


def _model_named(name: str) -> str:
    """The model string ``name`` stands for (an ``[aliases]`` name, else itself)."""
    from oracle_core.cli.common import load_settings

    return load_settings().resolve_model(name)
