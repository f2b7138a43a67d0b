"""How text becomes search terms, and how a request is cut into sentences.

Both the lexical index and the fit rule read terms through one :class:`Analyzer`, so a word
counts the same wherever it is compared.
"""

from __future__ import annotations

import re

_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "get",
        "give",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "show",
        "should",
        "so",
        "some",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "us",
        "want",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "would",
        "you",
        "your",
        "e",
        "g",
    ]
)


_WORDS_KEPT = 100_000
"""Request words whose terms an analyzer remembers at most (then it starts over)."""


class Analyzer:
    """Turns text into search terms: camelCase and snake_case split, stop words out, stemmed.

    One analyzer belongs to one index; it remembers the stems it has computed.

    Args:
        stem: English stemming (Snowball); ``False`` keeps words as they are (the plain
            baseline of ``bench/search.py``).
    """

    def __init__(self, stem: bool = True) -> None:
        import Stemmer  # type: ignore[import-not-found]

        self.stem = stem
        self._stemmer = Stemmer.Stemmer("english")
        self._stems: dict[str, str] = {}
        self._words: dict[str, list[str]] = {}

    @property
    def name(self) -> str:
        """What the index's digest records of this analyzer."""
        return "snowball-english" if self.stem else "no-stemming"

    def terms(self, text: str) -> list[str]:
        """The search terms of ``text``, in order, repeats kept (numbers alone are dropped)."""
        words = _WORD.findall(_CAMEL.sub(" ", text).lower())
        out: list[str] = []
        for word in words:
            if word in _STOPWORDS or word.isdigit():
                continue
            stem = self._stems.get(word)
            if stem is None:
                stem = self._stems[word] = self._stemmer.stemWord(word) if self.stem else word
            out.append(stem)
        return out

    def word_terms(self, word: str) -> list[str]:
        """:meth:`terms` of one word of a request, remembered (a request is read word by word
        to leave out the names the catalog does not know). Do not change the list."""
        known = self._words.get(word)
        if known is None:
            if len(self._words) >= _WORDS_KEPT:
                self._words.clear()
            known = self._words[word] = self.terms(word)
        return known


_CLAUSE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


def split_clauses(query: str) -> list[str]:
    """The sentences of ``query``: split after ``.``, ``!``, ``?`` or ``;`` and a space, and
    at line breaks (empty parts left out)."""
    return [part for part in _CLAUSE_END.split(query) if part.strip()]
