"""Token counts without tiktoken's encoder (values/bpe.py) equal tiktoken's, over a seeded
fuzz of the texts a run counts: prose in many scripts, code, JSON, digits, whitespace."""

from __future__ import annotations

import json
import random

import pytest

from oracle_core.values.bpe import LONGEST_PIECE, merged_length, ranks_file, shipped_ranks
from oracle_core.values.tokens import LONG_TEXT, _encoding, count_tokens

ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyz",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij",
    "0123456789",
    " \t\n\r",
    ".,;:!?'\"()[]{}<>/\\|@#$%^&*-_=+~`",
    "éèêëàâäôöûüçñßÉÀ",
    "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
    "的一是不了人我在有他这为之大来以个中上们",
    "あいうえおかきくけこアイウエオ",
    "😀🎉👍🏽🚀❤️🇫🇷",
    "\u0301\u0308\u200d\u00a0\u2028",  # combining marks, joiner, no-break space, line separator
    "'s 't 're 've 'm 'll 'd 'S 'LL",
]


def _text(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.15:
        return json.dumps({f"k{rng.randint(0, 99)}": rng.random(), "list": [1, "two", None]})
    if kind < 0.25:
        return "def f(x):\n    return x ** 2  # squares\n" * rng.randint(1, 3)
    pieces = []
    for _ in range(rng.randint(1, 40)):
        alphabet = rng.choice(ALPHABETS)
        pieces.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))))
        pieces.append(rng.choice(["", " ", "  ", "\n", "\n\n", " \n ", "\t"]))
    return "".join(pieces)


@pytest.fixture(scope="module")
def tiktoken_count():  # type: ignore[no-untyped-def]
    encoding = _encoding()
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def test_the_shipped_ranks_are_found_and_numbered_in_line_order() -> None:
    path = ranks_file()
    assert path is not None, "litellm ships o200k_base's ranks; TIKTOKEN_CACHE_DIR is set"
    ranks = [int(line.split()[1]) for line in path.read_bytes().splitlines() if line]

    assert ranks == list(range(len(ranks)))
    assert shipped_ranks() is not None


def test_a_seeded_fuzz_of_texts_counts_as_tiktoken_counts(tiktoken_count) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(27)
    ranks = shipped_ranks()
    assert ranks is not None
    declined = 0
    for _ in range(3000):
        text = _text(rng)
        counted = ranks.count(text)
        if counted is None:
            declined += 1
            continue
        assert counted == tiktoken_count(text), repr(text)
    assert declined < 30  # the fast path counts nearly all of them itself


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ping",
        "x" * (LONGEST_PIECE + 1),  # one long piece: tiktoken's to count
        "A" * 5000 + "b",
        "lone \ud800 surrogate",  # not valid Unicode: tiktoken replaces it
        "word " * (LONG_TEXT // 5 + 1),  # a long text: tiktoken's encoder
        "<|endoftext|> is text here, not a special token",
    ],
    ids=["empty", "one", "long-piece", "long-run", "surrogate", "long-text", "special"],
)
def test_edge_texts_count_as_tiktoken_counts(text: str, tiktoken_count) -> None:  # type: ignore[no-untyped-def]
    if "\ud800" in text:
        expected = tiktoken_count(
            text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        )
    else:
        expected = tiktoken_count(text)
    assert count_tokens(text) == expected


def test_merging_a_piece_joins_the_lowest_ranked_pair_first() -> None:
    ranks = {b"ab": 0, b"bc": 1, b"abc": 2}

    assert merged_length(ranks, b"abc") == 1  # ab (rank 0) first, then abc
    assert merged_length({b"bc": 0, b"ab": 1}, b"abc") == 2  # bc first: a + bc, no abc
    assert merged_length({}, b"xyz") == 3
