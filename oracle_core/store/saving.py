"""What every store does to a step before it saves it: clean its text and count its tokens.

And the way back: :func:`load_operation` reads an operation saved as JSON text. The calls
that clean and count cost time in proportion to a message's size (a 3 MB tool result takes a
noticeable fraction of a second to count), so stores make them off the event loop.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from oracle_core.values.messages import Message
from oracle_core.values.operations import Operation
from oracle_core.values.text import clean_json, clean_text
from oracle_core.values.threads import RunRecord
from oracle_core.values.tokens import count_message_tokens

count_message = count_message_tokens
"""The tokens of a message as the model sees it (see :func:`~oracle_core.values.tokens.count_message_tokens`)."""


def prepare_messages(
    messages: Sequence[Message], tokens: Sequence[int] | None = None
) -> tuple[list[Message], list[int]]:
    """Clean copies of ``messages`` (see :func:`~oracle_core.values.text.clean_json`) and their tokens.

    ``tokens`` are the writer's own counts of the same messages, used instead of counting
    again when there is one per message.
    """
    cleaned: list[Message] = [clean_json(m) for m in messages]
    if tokens is not None and len(tokens) == len(cleaned):
        return cleaned, list(tokens)
    return cleaned, [count_message_tokens(m) for m in cleaned]


def to_json(value: Any) -> tuple[str, Any]:
    """``value`` as JSON text with every string cleaned (keys too), and the clean value.

    With ``ensure_ascii=False`` a surrogate stays raw and each string's code units stay
    adjacent, so cleaning the JSON text cleans every string exactly as ``clean_json`` would;
    control characters, NUL included, are escaped by ``json.dumps``. The clean value is
    ``value`` itself when it was already valid (one dump, one encode).
    """
    raw = json.dumps(value, ensure_ascii=False)
    text = clean_text(raw)
    return text, (value if text is raw else json.loads(text))


def encode_messages(
    messages: Sequence[Message], tokens: Sequence[int] | None = None
) -> tuple[list[str], list[int]]:
    """Each message as clean JSON text (:func:`to_json`), and its token count.

    ``tokens`` are the writer's own counts, used as in :func:`prepare_messages`.
    """
    counts = list(tokens) if tokens is not None and len(tokens) == len(messages) else None
    texts, counted = [], []
    for index, message in enumerate(messages):
        text, clean = to_json(message)
        texts.append(text)
        counted.append(counts[index] if counts is not None else count_message_tokens(clean))
    return texts, counted


def clean_run(run: RunRecord) -> RunRecord:
    """A copy of ``run`` with every string in it cleaned."""
    return RunRecord.from_json(clean_json(run.to_json()))


def load_operation(text: str) -> Operation:
    """The operation a store saved as JSON text (:func:`to_json` of its record), cleaned."""
    return Operation.from_record(clean_json(json.loads(text)))
