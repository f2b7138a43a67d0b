"""Seeded text and JSON samples for the text and store tests."""

from __future__ import annotations

import random
from typing import Any

from support import reference_text


def random_text(rng: random.Random, longest: int = 12) -> str:
    """A string of random pieces: lone surrogates, pairs, NULs, controls, astral characters."""
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, longest)))


def random_json(rng: random.Random, depth: int) -> Any:
    """A JSON-shaped value with random strings, keys included, down to ``depth`` levels."""
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(
            [random_text(rng), random_text(rng), rng.randint(-(10**6), 10**6), 1.5, True, None]
        )
    if rng.random() < 0.5:
        return [random_json(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {random_text(rng, 4): random_json(rng, depth - 1) for _ in range(rng.randint(0, 3))}


def reference_json(value: Any) -> Any:
    """``value`` with :func:`reference_text` applied to every string, keys included."""
    if isinstance(value, str):
        return reference_text(value)
    if isinstance(value, dict):
        return {reference_text(k): reference_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [reference_json(v) for v in value]
    return value


PIECES = [
    "a",
    "Z",
    " ",
    "\\",
    '"',
    "\x00",
    "\x01",
    "\x1f",
    "\x7f",
    "\n",
    "é",
    "中",
    "\ufffd",
    "\ufeff",
    "😀",
    "\U0010ffff",
    "\ud83d",  # lone high surrogate
    "\ude00",  # lone low surrogate
    "\udbff",
    "\udc00",
    "\ud83d\ude00",  # a pair written as two code units
    "\ud800\ud800",
    "\udfff\ud800",
]
