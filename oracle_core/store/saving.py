"""What every store does to a step before it saves it: clean its text and count its tokens.

These calls cost time in proportion to a message's size (a 3 MB tool result takes a
noticeable fraction of a second to count), so stores make them off the event loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from oracle_core.run.messages import Message
from oracle_core.store.state import RunRecord
from oracle_core.text import clean_json
from oracle_core.tokens import count_message_tokens

count_message = count_message_tokens
"""The tokens of a message as the model sees it (see :func:`~oracle_core.tokens.count_message_tokens`)."""


def prepare_messages(
    messages: Sequence[Message], tokens: Sequence[int] | None = None
) -> tuple[list[Message], list[int]]:
    """Clean copies of ``messages`` (see :func:`~oracle_core.text.clean_json`) and their tokens.

    ``tokens`` are the writer's own counts of the same messages, used instead of counting
    again when there is one per message.
    """
    cleaned: list[Message] = [clean_json(m) for m in messages]
    if tokens is not None and len(tokens) == len(cleaned):
        return cleaned, list(tokens)
    return cleaned, [count_message_tokens(m) for m in cleaned]


def clean_run(run: RunRecord) -> RunRecord:
    """A copy of ``run`` with every string in it cleaned."""
    return RunRecord.from_json(clean_json(run.to_json()))
