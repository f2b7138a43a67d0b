"""Any string, however a model or a client spelled it, comes out encodable as UTF-8."""

from __future__ import annotations

import random
from typing import Any

from support import reference_text

from oracle_core.values.text import StreamText, clean_json, clean_text

# Pieces random strings are made of: the characters that break text and those that must survive.
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


def test_a_pair_written_as_two_code_units_becomes_its_character() -> None:
    assert clean_text("smile \ud83d\ude00") == "smile 😀"


def test_a_lone_surrogate_becomes_the_replacement_character() -> None:
    assert clean_text("\ud83d") == "\ufffd"
    assert clean_text("a\ude00b\ud83dc") == "a\ufffdb\ufffdc"
    assert clean_text("\ud83d😀") == "\ufffd😀"


def test_valid_text_is_returned_unchanged_nuls_and_controls_included() -> None:
    text = "ok \x00\x1f\x7f é 中 😀 \U0010ffff"

    assert clean_text(text) is text


def test_random_strings_clean_to_valid_utf8_as_the_reference_says() -> None:
    rng = random.Random(11)
    for _ in range(5000):
        text = random_text(rng, 30)

        cleaned = clean_text(text)

        assert cleaned == reference_text(text), repr(text)
        cleaned.encode("utf-8")


def test_every_string_of_a_nested_value_is_cleaned_keys_included() -> None:
    value = {"\ud83d": [{"k": ("\ude00", 1, None)}], "ok": {"deep": ["\ud83d\ude00"]}}

    assert clean_json(value) == {"\ufffd": [{"k": ["\ufffd", 1, None]}], "ok": {"deep": ["😀"]}}


def test_random_nested_values_clean_as_the_reference_says_and_share_no_container() -> None:
    rng = random.Random(12)
    for _ in range(1000):
        value = random_json(rng, 6)

        cleaned = clean_json(value)

        assert cleaned == reference_json(value)
        if isinstance(value, dict | list):
            assert cleaned is not value


def test_text_cleaned_piece_by_piece_reads_as_the_whole_text_cleaned() -> None:
    rng = random.Random(23)
    units = ["a", "é", "\ud83d", "\ude00", "\udbff", "\udc00", "😀", "\x00"]
    for _ in range(500):
        text = "".join(rng.choice(units) for _ in range(rng.randint(0, 12)))
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 4))))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        stream = StreamText()
        streamed = "".join(stream.feed(p) for p in pieces) + stream.flush()
        assert streamed == reference_text(text), (text, pieces)
