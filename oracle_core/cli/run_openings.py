"""Which saved message opened each run of a thread, for ``oracle logs`` and ``threads show``.

Messages carry no run id or time, so they are matched by order: each run opens with one user
message (a repair request is the run's own, not something the user said), so the last
``len(runs)`` such messages are the runs' (a client may have seeded earlier ones). With
fewer such messages than runs the match cannot be told.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oracle_core.values.attachments import content_text

REPAIR_OPENING = "Your answer is not valid for the output schema"
"""How a repair turn's user message opens (run/output.py ``repair_request``)."""


def message_text(message: Mapping[str, Any]) -> str:
    """A message's text (content parts: the text ones, ``[image]`` for an image)."""
    return content_text(message.get("content"))


def run_openings(messages: Sequence[Mapping[str, Any]], runs: int) -> list[int] | None:
    """The index in ``messages`` of the user message that opened each of ``runs`` runs, in
    order; ``None`` when it cannot be told (fewer user messages than runs)."""
    opening = [
        index
        for index, message in enumerate(messages)
        if message.get("role") == "user" and not message_text(message).startswith(REPAIR_OPENING)
    ]
    if len(opening) < runs:
        return None
    return opening[len(opening) - runs :] if runs else []
