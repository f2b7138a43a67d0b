"""One log line per finished run, and the run's ids on every line written while it works.

:class:`RunLog` is a :class:`~oracle_core.run.observe.RunObserver` that every oracle has
(:func:`~oracle_core.telemetry.default_observers`). When a run (or a resumed part of one)
starts, it sets :data:`~oracle_core.telemetry.log_context.RUN_ID` and
:data:`~oracle_core.telemetry.log_context.THREAD_ID` in the context of the task working the
run, so every line logged for it (the loop, tools, models, plugins) can name them; when the
run ends, it logs one line on the ``oracle_core.runs`` logger (``INFO``; ``WARNING`` for a
failed run) and puts the ids back.
``oracle serve`` shows that line (docs/server.md); elsewhere it is shown only where the
application logs ``INFO`` of ``oracle_core``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from contextvars import Token
from dataclasses import dataclass
from typing import TYPE_CHECKING

from oracle_core.telemetry.log_context import RUN_ID, THREAD_ID
from oracle_core.telemetry.span_content import failure
from oracle_core.values.events import RunFinished, RunStarted

if TYPE_CHECKING:
    from oracle_core.plugins.registry import Registry
    from oracle_core.run.state import RunState
    from oracle_core.values.events import Event

log = logging.getLogger("oracle_core.runs")

NOTES_KEY = "oracle_core.run_log"
"""The key of :attr:`RunState.notes <oracle_core.run.state.RunState.notes>` this observer keeps
a run's start under."""


@dataclass
class _Started:
    """When a run's part started, and the context tokens to put the ids back with."""

    at: float
    run: Token[str | None]
    thread: Token[str | None]


class RunLog:
    """Names the run in the log context while it works, and logs a line when it ends.

    The line's message reads ``run R on thread T completed in 1.20 s, 410 tokens (380
    prompt + 30 completion)``; its record also carries ``thread_id``, ``run_id``,
    ``status``, ``duration_seconds``, ``prompt_tokens``, ``completion_tokens`` and
    ``total_tokens`` (``--log-format json`` writes each as a field). A failed run's line
    ends with its error's type and a fixed reason, or with ``content`` on
    (``ORACLE_TRACE_CONTENT``) the first line of its error: an error's text may quote the
    run's content (a provider echoing the prompt, an output check quoting the answer).

    Args:
        content: end a failed run's line with its error's text.
    """

    def __init__(self, *, content: bool = False) -> None:
        self.content = content

    def observe(self, registry: Registry, state: RunState, event: Event) -> None:
        """Set the ids on :class:`RunStarted`; log the run and reset them on :class:`RunFinished`."""
        if isinstance(event, RunStarted):
            state.notes[NOTES_KEY] = _Started(
                time.monotonic(), RUN_ID.set(event.run_id), THREAD_ID.set(event.thread_id)
            )
        elif isinstance(event, RunFinished):
            started = state.notes.pop(NOTES_KEY, None)
            seconds = None if started is None else time.monotonic() - started.at
            error = failure(state.error_type, event.error, self.content) if event.error else ""
            _log_finished(state.thread_id, event, seconds, error)
            if started is not None:
                _reset(started)


def _log_finished(thread_id: str, event: RunFinished, seconds: float | None, error: str) -> None:
    usage = event.usage
    took = "" if seconds is None else f" in {seconds:.2f} s"
    estimated = ", estimated" if usage.estimated else ""
    lines = error.strip().splitlines()
    error = f": {lines[0][:300]}" if lines else ""
    log.log(
        logging.WARNING if event.status == "failed" else logging.INFO,
        "run %s on thread %s %s%s, %d tokens (%d prompt + %d completion%s)%s",
        event.run_id,
        thread_id,
        event.status,
        took,
        usage.total_tokens,
        usage.prompt_tokens,
        usage.completion_tokens,
        estimated,
        error,
        extra={
            "thread_id": thread_id,
            "run_id": event.run_id,
            "status": event.status,
            "duration_seconds": None if seconds is None else round(seconds, 3),
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
    )


def _reset(started: _Started) -> None:
    """Put the ids back as they were before the run; a run told it finished in another
    context (its caller closed its stream from elsewhere) leaves that context alone."""
    for variable, token in ((RUN_ID, started.run), (THREAD_ID, started.thread)):
        with contextlib.suppress(ValueError):
            variable.reset(token)


__all__ = ["NOTES_KEY", "RunLog"]
