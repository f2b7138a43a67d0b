"""Any string, however a model or a client spelled it, comes out encodable as UTF-8."""

from __future__ import annotations

import random
from typing import Any

import pytest
from support import reference_text
from text_samples import random_json, random_text, reference_json

from oracle_core.values.text import StreamText, clean_json, clean_text, json_depth

# Pieces random strings are made of: the characters that break text and those that must survive.


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


def _deep(depth: int, rng: random.Random) -> tuple[Any, int]:
    """A value ``depth`` deep, and how many lone surrogates it holds (keys included)."""
    value: Any = "\ud83d"
    lone = 1
    for _ in range(depth):
        if rng.random() < 0.5:
            value, lone = {"\ude00": value}, lone + 1
        else:
            value = [value, 1]
    return value, lone


def _strings(value: Any) -> list[str]:
    """Every string of ``value``, keys included, found without recursion."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend([*item.keys(), *item.values()])
        elif isinstance(item, list):
            stack.extend(item)
    return found


def test_nesting_past_pythons_recursion_limit_is_cleaned_and_measured_without_recursing() -> None:
    rng = random.Random(38)
    for depth in [*rng.sample(range(900, 1000), 10), 1, 2, 63, 64, 65]:
        value, lone = _deep(depth, rng)

        cleaned = clean_json(value)

        assert json_depth(value) == depth == json_depth(cleaned)
        assert json_depth(value, stop=64) == min(depth, 65)
        assert _strings(cleaned) == ["\ufffd"] * lone


def test_random_nested_values_measure_as_a_recursive_reference_says() -> None:
    def reference(value: Any) -> int:
        if isinstance(value, dict):
            return 1 + max(map(reference, value.values()), default=0)
        if isinstance(value, list):
            return 1 + max(map(reference, value), default=0)
        return 0

    rng = random.Random(39)
    for _ in range(1000):
        value = random_json(rng, 6)

        assert json_depth(value) == reference(value), value


def test_a_value_too_deep_to_be_json_is_refused_not_walked_forever() -> None:
    loop: list[Any] = []
    loop.append(loop)

    with pytest.raises(ValueError, match="deeper than 1000 levels"):
        clean_json(loop)
