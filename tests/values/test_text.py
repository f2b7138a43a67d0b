"""Any string, however a model or a client spelled it, comes out encodable as UTF-8."""

from __future__ import annotations

import random

from support import reference_text
from text_samples import random_json, random_text, reference_json

from oracle_core.values.text import StreamText, clean_json, clean_text

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
