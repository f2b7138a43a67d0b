"""Seeded variations of a streamed tool-call answer, in the ways real servers deviate.

What OpenAI-compatible servers do to a streamed tool call, seen in llama.cpp's recordings
(tests/fixtures/llamacpp/) and reported of others (Ollama, vLLM, LM Studio):

- the name in every piece of the call (llama.cpp), or once, or split over pieces, or the
  name so far sent again;
- arguments in pieces of any size, some empty;
- the id in the first piece, a later one, every one, or none;
- two calls' pieces interleaved (by ``index``);
- no usage chunk, a usage chunk without ``choices``, or usage on the last choice chunk;
- ``type`` left out, ``content: null`` beside the calls, llama.cpp's legacy ``function_call``.

:func:`quirky_stream` makes one such stream from a seed; the same seed gives the same stream.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oracle_core.testing.exchange import Exchange

NAME_MODES = ("once", "every", "split", "stutter")
"""How a call's name is sent: in its first piece, whole in every piece, in pieces joined
into it, or in pieces with the name so far sent again."""

ID_MODES = ("first", "late", "every", "none")
"""Where a call's id is sent: its first piece, a later one, every one, or nowhere."""

USAGE_MODES = ("chunk", "none", "last_choice")
"""How usage is reported: a last chunk without choices, not at all, or on the finish chunk."""


@dataclass(frozen=True)
class QuirkyStream:
    """A generated stream and what it must assemble to.

    Attributes:
        exchange: the stream, ready to replay (``Reply.replay(stream.exchange)``).
        calls: ``(name, arguments)`` of each call, in index order.
        ids: each call's id as sent (``None`` when the stream never sends one).
        text: the text before the calls.
        usage: ``(prompt, completion)`` tokens when the stream reports them.
        quirks: the choices made, for a failing test's message.
    """

    exchange: Exchange
    calls: tuple[tuple[str, str], ...]
    ids: tuple[str | None, ...]
    text: str
    usage: tuple[int, int] | None
    quirks: dict[str, Any]


def _cuts(rng: random.Random, text: str, most: int) -> list[str]:
    """``text`` in 1 to ``most`` pieces at random places (a piece may be empty)."""
    if not text:
        return [""]
    points = sorted(rng.randint(0, len(text)) for _ in range(rng.randint(0, most - 1)))
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _name_pieces(rng: random.Random, name: str, mode: str, count: int) -> list[str | None]:
    """The name carried by each of ``count`` pieces (``None``: the piece has no name)."""
    if mode == "every":
        return [name] * count
    if mode == "once" or count == 1 or len(name) < 2:
        return [name] + [None] * (count - 1)
    cut = rng.randint(1, len(name) - 1)
    head, tail = name[:cut], name[cut:]
    if mode == "split" or count < 3 or tail == head:
        return [head, tail] + [None] * (count - 2)
    return [head, head, tail] + [None] * (count - 3)  # stutter: the name so far again


def _call_pieces(
    rng: random.Random, index: int, name: str, arguments: str, call_id: str | None
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The ``tool_calls`` pieces of one call, and the quirks chosen for it."""
    name_mode = rng.choice(NAME_MODES)
    id_mode = rng.choice(ID_MODES) if call_id is not None else "none"
    args = _cuts(rng, arguments, 5)
    count = max(len(args) + 1, 3 if name_mode == "stutter" else 2)
    args = [""] * (count - len(args)) + args  # the name comes first, arguments after
    names = _name_pieces(rng, name, name_mode, count)
    late = rng.randint(1, count - 1)
    typed = rng.random() < 0.7
    pieces = []
    for number, (piece_name, piece_args) in enumerate(zip(names, args, strict=True)):
        piece: dict[str, Any] = {"index": index}
        if call_id is not None and (
            id_mode == "every"
            or (id_mode == "first" and number == 0)
            or (id_mode == "late" and number == late)
        ):
            piece["id"] = call_id
        if typed and "id" in piece:
            piece["type"] = "function"
        function: dict[str, Any] = {"arguments": piece_args}  # litellm needs a function
        if piece_name is not None:
            function["name"] = piece_name
        piece["function"] = function
        pieces.append(piece)
    return pieces, {"name": name_mode, "id": id_mode}


def _interleave(rng: random.Random, queues: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every queue's pieces in its own order, the queues mixed at random."""
    out: list[dict[str, Any]] = []
    live = [list(q) for q in queues if q]
    while live:
        queue = rng.choice(live)
        out.append(queue.pop(0))
        live = [q for q in live if q]
    return out


def quirky_stream(
    calls: Sequence[tuple[str, dict[str, Any]]], seed: int, *, model: str = "gemma-3-270m"
) -> QuirkyStream:
    """A streamed answer calling each of ``calls`` (``(name, arguments)``), varied by ``seed``."""
    rng = random.Random(seed)
    text = rng.choice(["", "", "Let me check. "])
    base = {
        "id": f"chatcmpl-{seed}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
    }
    legacy = rng.random() < 0.3  # llama.cpp's function_call beside tool_calls

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": rng.choice(["", None])})]
    chunks += [chunk({"content": piece}) for piece in _cuts(rng, text, 3) if piece]
    queues, quirks, ids, expected = [], [], [], []
    for index, (name, arguments) in enumerate(calls):
        call_id = None if rng.random() < 0.2 else f"call_{seed}_{index}"
        encoded = json.dumps(arguments, separators=rng.choice([(",", ":"), (", ", ": ")]))
        pieces, chosen = _call_pieces(rng, index, name, encoded, call_id)
        queues.append(pieces)
        quirks.append(chosen)
        ids.append(call_id if chosen["id"] != "none" else None)
        expected.append((name, encoded))
    interleaved = len(calls) > 1 and rng.random() < 0.5
    order = _interleave(rng, queues) if interleaved else [p for q in queues for p in q]
    for piece in order:
        delta: dict[str, Any] = {"tool_calls": [piece]}
        if rng.random() < 0.5:
            delta["content"] = None
        if legacy and "function" in piece:
            delta["function_call"] = piece["function"]
        chunks.append(chunk(delta))
    usage_mode = rng.choice(USAGE_MODES)
    usage = (rng.randint(50, 900), rng.randint(5, 90))
    figures = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    finish = chunk({}, "tool_calls" if calls else "stop")
    if usage_mode == "last_choice":
        finish["usage"] = figures
    chunks.append(finish)
    if usage_mode == "chunk":
        chunks.append({**base, "choices": [], "usage": figures})
    events = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return QuirkyStream(
        Exchange.of_events(events),
        tuple(expected),
        tuple(ids),
        text,
        None if usage_mode == "none" else usage,
        {"calls": quirks, "interleaved": interleaved, "usage": usage_mode, "legacy": legacy},
    )
