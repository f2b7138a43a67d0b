"""BM25 over a growing set of documents, one posting array per term.

Documents are added and removed one at a time (adding or upgrading one plugin touches only
its own terms), and the IDF and length normalization are applied at query time from the
live counts, so an index never has to be rebuilt for one change.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet

import numpy as np

BM25_K1 = 1.2
"""Term frequency saturation: every field counts once, so repeats need not count much."""

BM25_B = 0.5
"""Document length normalization: plugins with many tools have long documents that are not
less relevant for it; 0.5 beat 0.75 on the tuning sets."""


_NO_ROWS = np.zeros(0, np.int64)
_NO_SCORES = np.zeros(0, np.float32)


class LexicalIndex:
    """BM25 (Lucene's IDF) over documents numbered by row; rows are never reused.

    Args:
        k1: term frequency saturation.
        b: document length normalization.
    """

    def __init__(self, k1: float = BM25_K1, b: float = BM25_B) -> None:
        self.k1 = k1
        self.b = b
        self._docs: dict[str, np.ndarray] = {}
        self._tfs: dict[str, np.ndarray] = {}
        self._terms_of: list[Counter[str] | None] = []
        self._lengths = np.zeros(0, dtype=np.float32)
        self._total_length = 0.0
        self._live = 0
        self._scored: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # cleared on any change
        self._specific: dict[tuple[str, float], float] = {}  # likewise

    @property
    def rows(self) -> int:
        """Rows ever added (removed ones included: they score nothing)."""
        return len(self._terms_of)

    @property
    def live(self) -> int:
        """Documents in the index."""
        return self._live

    def add(self, documents: Sequence[Sequence[str]]) -> None:
        """Append ``documents`` (each a list of terms) as the next rows."""
        start = self.rows
        grouped: dict[str, tuple[list[int], list[int]]] = {}
        lengths = []
        for offset, terms in enumerate(documents):
            counts = Counter(terms)
            self._terms_of.append(counts)
            lengths.append(len(terms))
            for term, tf in counts.items():
                rows, tfs = grouped.setdefault(term, ([], []))
                rows.append(start + offset)
                tfs.append(tf)
        self._scored.clear()
        self._specific.clear()
        self._lengths = np.concatenate([self._lengths, np.array(lengths, dtype=np.float32)])
        self._total_length += float(sum(lengths))
        self._live += len(documents)
        for term, (rows, tfs) in grouped.items():
            new_rows = np.array(rows, dtype=np.int64)
            new_tfs = np.array(tfs, dtype=np.float32)
            if term in self._docs:
                new_rows = np.concatenate([self._docs[term], new_rows])
                new_tfs = np.concatenate([self._tfs[term], new_tfs])
            self._docs[term], self._tfs[term] = new_rows, new_tfs

    def remove(self, rows: Iterable[int]) -> None:
        """Take the documents of ``rows`` out (their rows stay, empty)."""
        for row in rows:
            counts = self._terms_of[row]
            if counts is None:
                continue
            self._terms_of[row] = None
            self._scored.clear()
            self._specific.clear()
            self._total_length -= float(self._lengths[row])
            self._lengths[row] = 0.0
            self._live -= 1
            for term in counts:
                keep = self._docs[term] != row
                if keep.all():
                    continue
                if not keep.any():
                    del self._docs[term], self._tfs[term]
                else:
                    self._docs[term], self._tfs[term] = (
                        self._docs[term][keep],
                        self._tfs[term][keep],
                    )

    def frequency(self, term: str) -> int:
        """In how many documents ``term`` occurs."""
        rows = self._docs.get(term)
        return 0 if rows is None else len(rows)

    def idf(self, term: str) -> float:
        """Lucene's BM25 IDF of ``term`` (0 for a term no document holds)."""
        df = self.frequency(term)
        if not df:
            return 0.0
        return math.log(1 + (self._live - df + 0.5) / (df + 0.5))

    def specificity(self, term: str, share: float) -> float:
        """How specific ``term`` is, from 0 (every document) to 1 (at most ``share`` of them).

        ``log(M / df) / log(1 / share)`` capped at 1, where ``M`` is the number of documents
        but at least ``1 / share``: a small catalog counts as if it had that many, the rest
        holding none of its words, so a word two of four plugins hold is still fairly
        specific (0.8 at 3%) rather than half as generic as the language.
        """
        key = (term, share)
        known = self._specific.get(key)
        if known is not None:
            return known
        df = self.frequency(term)
        if not df:
            return 0.0
        ceiling = math.log(1 / share)
        value = min(1.0, math.log(max(self._live, 1 / share) / df) / ceiling)
        self._specific[key] = value
        return value

    def rarest_idf(self) -> float:
        """The IDF of a term that one document holds: the unit of word evidence."""
        return math.log(1 + (max(self._live, 1) - 0.5) / 1.5)

    def terms_of(self, row: int) -> AbstractSet[str]:
        """The terms the document of ``row`` holds (none for a removed one)."""
        counts = self._terms_of[row]
        return frozenset() if counts is None else counts.keys()

    def has(self, row: int, term: str) -> bool:
        """Whether the document of ``row`` holds ``term``."""
        counts = self._terms_of[row]
        return counts is not None and term in counts

    def term_scores(self, terms: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each term: the rows holding it and its BM25 score in each (kept per term until
        the index changes: a catalog's queries share their words)."""
        average = self._total_length / max(self._live, 1) or 1.0
        out = []
        for term in terms:
            known = self._scored.get(term)
            if known is not None:
                out.append(known)
                continue
            rows = self._docs.get(term)
            if rows is None:
                out.append((_NO_ROWS, _NO_SCORES))
                continue
            tf = self._tfs[term]
            norm = self.k1 * (1 - self.b + self.b * self._lengths[rows] / average)
            scored = (rows, self.idf(term) * tf * (self.k1 + 1) / (tf + norm))
            self._scored[term] = scored
            out.append(scored)
        return out

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """The BM25 score of every row for the query ``terms`` (each term counted once)."""
        return summed(self.term_scores(list(dict.fromkeys(terms))), self.rows)


def summed(postings: Sequence[tuple[np.ndarray, np.ndarray]], rows: int) -> np.ndarray:
    """Every row's total of the ``(rows, scores)`` postings, in one pass."""
    if not postings:
        return np.zeros(rows, dtype=np.float32)
    if len(postings) == 1:
        total = np.zeros(rows, dtype=np.float32)
        total[postings[0][0]] = postings[0][1]  # rows are distinct within one posting list
        return total
    at = np.concatenate([r for r, _ in postings])
    values = np.concatenate([v for _, v in postings])
    return np.bincount(at, weights=values, minlength=rows).astype(np.float32)
