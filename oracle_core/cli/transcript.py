"""How run events read in the terminal, shared by ``oracle chat`` and ``oracle demo``."""

from __future__ import annotations

import click

from oracle_core.run.events import CapabilityLoaded, Event, ToolCallEvent, ToolResultEvent


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
