"""``o200k_base`` token counts without building tiktoken's encoder: the ranks file litellm
ships, read in a tenth of the time, and byte-pair merges in Python for short pieces.

tiktoken builds its Rust encoder from the 200,000 ranks on first use: half a second of CPU,
which ``oracle ask`` paid to count a one-line message (a bare openai-SDK script pays
nothing). Counting needs less: split the text with the encoding's own pattern (the
``regex`` module, as tiktoken's reference implementation does), count a piece that is one
token in the ranks as 1, and merge the bytes of the rest pair by pair, lowest rank first,
which is tiktoken's algorithm. Pieces are short, so the merging is quick; a piece longer
than :data:`LONGEST_PIECE` bytes (a long run with no separator, such as base64) is left to
tiktoken (:func:`count` answers ``None``), and so is text that is not valid Unicode.

The ranks file is litellm's copy of ``o200k_base.tiktoken`` (under ``TIKTOKEN_CACHE_DIR``,
named by the SHA-1 of its URL, as tiktoken names it) and is checked against the encoding's
SHA-256 before use; without it, or with another file there, everything goes to tiktoken.
A test compares both on a seeded fuzz of texts.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import os
from pathlib import Path
from typing import Any

from oracle_core.environment import TIKTOKEN_CACHE, prepare_tokenizer

RANKS_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
"""Where tiktoken would fetch the ranks from (the cache file is named by its SHA-1)."""

RANKS_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""The ranks file's SHA-256, as tiktoken checks it."""

PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)  # fmt: skip
"""``o200k_base``'s split pattern, as ``tiktoken_ext.openai_public`` defines it."""

LONGEST_PIECE = 96
"""Bytes of the longest piece merged here; a longer one goes to tiktoken (merging is
quadratic in a piece's length)."""


class Ranks:
    """The ranks of ``o200k_base`` and its split pattern.

    Args:
        ranks: each token's bytes to its rank.
    """

    def __init__(self, ranks: dict[bytes, int]) -> None:
        import regex

        self.ranks = ranks
        self.pattern: Any = regex.compile(PATTERN)

    def count(self, text: str) -> int | None:
        """Tokens in ``text``; ``None`` when it is tiktoken's to count (a long piece, or
        text that is not valid Unicode)."""
        ranks, total = self.ranks, 0
        try:
            for piece in self.pattern.findall(text):
                data = piece.encode("utf-8")
                if data in ranks:
                    total += 1
                elif len(data) > LONGEST_PIECE:
                    return None
                else:
                    total += merged_length(ranks, data)
        except UnicodeEncodeError:  # a lone surrogate: tiktoken replaces it first
            return None
        return total


def merged_length(ranks: dict[bytes, int], data: bytes) -> int:
    """How many tokens ``data`` merges into: adjacent pairs joined, lowest rank first,
    leftmost on a tie, until no pair is a token (tiktoken's ``byte_pair_merge``)."""
    parts = [data[i : i + 1] for i in range(len(data))]
    while len(parts) > 1:
        best, where = None, -1
        for index in range(len(parts) - 1):
            rank = ranks.get(parts[index] + parts[index + 1])
            if rank is not None and (best is None or rank < best):
                best, where = rank, index
        if best is None:
            break
        parts[where : where + 2] = [parts[where] + parts[where + 1]]
    return len(parts)


def ranks_file() -> Path | None:
    """litellm's copy of the ranks, found where :func:`prepare_tokenizer` points tiktoken."""
    prepare_tokenizer()
    folder = os.environ.get(TIKTOKEN_CACHE)
    if not folder:
        return None
    path = Path(folder) / hashlib.sha1(RANKS_URL.encode()).hexdigest()
    return path if path.is_file() else None


@functools.cache
def shipped_ranks() -> Ranks | None:
    """The ranks read once per process from :func:`ranks_file` (read-only afterwards, like
    tiktoken's own encoder cache); ``None`` when the file is missing or not the encoding's."""
    path = ranks_file()
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != RANKS_SHA256:
        return None
    # Lines of "<base64 token> <rank>"; in this file (its hash checked above) the ranks are
    # 0, 1, 2, ... in line order (tests/values/test_token_counts.py checks it), so they are not parsed.
    tokens = map(binascii.a2b_base64, data.split()[0::2])
    return Ranks({token: rank for rank, token in enumerate(tokens)})
