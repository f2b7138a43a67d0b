"""A thread's title in listings: the first words of its first user message, the same in every
store (the SQL stores make it in their query)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from oracle_core.store import Checkpointer
from oracle_core.values.titles import TITLE_CHARS, first_user_title, thread_title

PIECES = [
    "What is the weather in Porto", "tomorrow?", "  ", "\n\n", "\t", "\x00", "\x1b[31m",
    "\u2028", "😀", "𝕏", '"quoted"', "back\\slash", "\\u0000", "\\\\u0000", "<b>bold</b>",
    "a" * 70, "Ünïcödé", "مرحبا", "{\"role\": \"user\"}", "word " * 30,
]  # fmt: skip
"""What a first message is made of: plain words, white space and control characters, NULs,
astral characters, JSON- and HTML-special text, text that looks like an escape, long runs."""


def seeded_content(rng: random.Random) -> Any:
    text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 6)))
    if rng.random() < 0.3:  # content parts: text, images, a part of another kind
        parts: list[dict[str, Any]] = []
        for _ in range(rng.randrange(1, 4)):
            kind = rng.choice(["text", "text", "image_url", "input_audio"])
            if kind == "text":
                parts.append({"type": "text", "text": rng.choice(PIECES) * rng.randrange(1, 3)})
            elif kind == "image_url":
                parts.append(
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}
                )
            else:
                parts.append({"type": kind, "input_audio": {"data": "AA", "format": "wav"}})
        return parts
    return text


def seeded_thread(rng: random.Random) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.2:
        messages.append({"role": "system", "content": "You are terse."})
    if rng.random() < 0.1:
        messages.append({"role": "assistant", "content": "Hello, ask me anything."})
    messages.append({"role": "user", "content": seeded_content(rng)})
    messages.append({"role": "assistant", "content": "An answer."})
    messages.append({"role": "user", "content": "A later question."})
    return messages


@pytest.mark.parametrize("seed", range(3))
async def test_every_store_lists_each_thread_with_the_title_of_its_first_user_message(
    connect: Callable[[], Checkpointer], seed: int
) -> None:
    rng = random.Random(seed)
    store = connect()
    threads = {f"t{i}": seeded_thread(rng) for i in range(25)}
    threads["no-user"] = [{"role": "assistant", "content": "Nobody asked."}]
    for thread_id, messages in threads.items():
        await store.append(thread_id, base=0, messages=messages)

    listed = {s.thread_id: s.title for s in await store.thread_summaries()}

    assert listed == {t: first_user_title(m) for t, m in threads.items()}
    assert listed["no-user"] == ""
    for title in listed.values():
        assert len(title) <= TITLE_CHARS
        assert title == title.strip() and "  " not in title
        assert not any(ord(c) < 32 or ord(c) == 127 for c in title)


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("What is the weather in Porto tomorrow?", "What is the weather in Porto tomorrow?"),
        ("  Two\n\nlines\there  ", "Two lines here"),
        (
            "Please summarise the attached quarterly report and list every risk it names",
            "Please summarise the attached quarterly report and list…",
        ),
        ("x" * 100, "x" * (TITLE_CHARS - 1) + "…"),
        ("", ""),
    ],
)
def test_a_title_is_the_message_folded_and_cut_at_a_word(text: str, title: str) -> None:
    assert thread_title(text) == title
