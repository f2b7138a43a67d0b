"""How run events read in the terminal, shared by ``oracle chat``, ``ask`` and ``demo``."""

from __future__ import annotations

from collections.abc import Callable

import click

from oracle_core.values.events import (
    CapabilityLoaded,
    Event,
    ModelCallStarted,
    RunFinished,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
)

ANSWER_PREFIX = "oracle> "
"""What starts each line of answer text in ``oracle chat``."""


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tool_line(event: Event, *, limit: int = 200) -> str | None:
    """A tool call, tool result or capability load as one styled line (else ``None``)."""
    if isinstance(event, ToolCallEvent):
        return click.style(f"  → {event.name}({event.arguments})", fg="cyan")
    if isinstance(event, ToolResultEvent):
        colour = "red" if event.is_error else "green"
        return click.style(f"  ← {shorten(event.content, limit)}", fg=colour)
    if isinstance(event, CapabilityLoaded):
        names = ", ".join(event.names)
        return click.style(
            f"  ⊕ loaded {names}: its tools are shown from the next call", fg="magenta"
        )
    return None


def status_of(event: Event) -> str | None:
    """What a progress indicator says after ``event`` (``None``: keep what it says)."""
    if isinstance(event, ModelCallStarted):
        return "thinking..." if event.step == 1 else f"thinking (step {event.step})..."
    if isinstance(event, ToolCallEvent):
        return f"running {event.name}..."
    return None


class Transcript:
    """Writes a run's events to the terminal, each kind on lines of its own.

    Tool calls, results and loads are whole lines; the answer's text streams after
    ``oracle> `` on a line of its own, so it never runs on from a tool line, and a tool line
    after some text starts on a new line.

    Args:
        write: where the text goes (default: stdout, without adding newlines).
        verbose: also show each model call with its tools and prompt tokens.
    """

    def __init__(
        self, write: Callable[[str], None] | None = None, *, verbose: bool = False
    ) -> None:
        self._write = write or (lambda text: click.echo(text, nl=False))
        self.verbose = verbose
        self._in_text = False
        self._streamed = False

    def _line(self, text: str) -> None:
        self.end_text()
        self._write(text + "\n")

    def end_text(self) -> None:
        """End the answer's line if one is open (before anything else is written)."""
        if self._in_text:
            self._write("\n")
            self._in_text = False

    def text(self, text: str) -> None:
        """Write answer text, starting an ``oracle>`` line first when none is open."""
        if not text:
            return
        if not self._in_text:
            self._write(click.style(ANSWER_PREFIX, bold=True))
            self._in_text = True
        self._streamed = True
        self._write(text)

    def event(self, event: Event) -> None:
        """Write ``event`` as it should read (some kinds are not shown)."""
        if isinstance(event, TextDelta):
            self.text(event.text)
            return
        line = tool_line(event)
        if line is not None:
            self._line(line)
        elif isinstance(event, ModelCallStarted) and self.verbose:
            total = event.tokens.get("total", 0)
            self._line(
                click.style(
                    f"  [step {event.step}: {len(event.tools)} tools, {total} prompt tokens]",
                    dim=True,
                )
            )
        elif isinstance(event, RunFinished):
            self._finished(event)

    def _finished(self, event: RunFinished) -> None:
        if event.status == "completed" and event.answer and not self._streamed:
            self.text(event.answer)  # a model that did not stream its answer
        if event.status.startswith("waiting_for_"):
            what = event.status.removeprefix("waiting_for_")
            ids = ", ".join(str(op.get("id")) for op in event.operations)
            self._line(click.style(f"  ⏸ waiting for {what} ({ids})", fg="yellow"))
            return
        if event.status != "completed":
            self._line(click.style(f"  ✗ {event.status}: {event.error}", fg="red"))
            return
        usage = event.usage
        # "~": the oracle's own count, the model reported none (as oracle logs marks it)
        mark = "estimated: ~" if usage.estimated else ""
        self._line(
            click.style(
                f"  [{mark}{usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
                "tokens]",
                dim=True,
            )
        )
