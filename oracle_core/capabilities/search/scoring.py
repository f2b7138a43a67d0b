"""The raw scores of one query against every plugin: BM25 and cosine similarities.

Each query gets, per plugin row: the BM25 score of its plugin document and of its best tool
document, and, with embeddings, the cosine of the query to what the plugin is for, to its
best tool and to its best short field. A request of several sentences also gets each
sentence's scores against the tools (a sentence asks for one action).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from oracle_core.capabilities.search.analyzer import split_clauses
from oracle_core.capabilities.search.index import CatalogIndex


@dataclass
class Scores:
    """One text's raw scores over every plugin row (and its terms, for the fit rule).

    Attributes:
        terms: the text's search terms, once each, in order.
        lexical_plugin: BM25 of each plugin document.
        lexical_tool: BM25 of each plugin's best tool document.
        tool_rows: BM25 of every tool row (which tools matched).
        semantic_plugin: cosine to each plugin's sentence (``None``: lexical only).
        semantic_tool: cosine to each plugin's best tool.
        semantic_field: cosine to each plugin's best short field.
        tool_cosines: cosine to every tool row.
        sentences: each sentence's scores, when the text has several.
    """

    terms: list[str]
    lexical_plugin: np.ndarray
    lexical_tool: np.ndarray
    tool_rows: np.ndarray
    semantic_plugin: np.ndarray | None = None
    semantic_tool: np.ndarray | None = None
    semantic_field: np.ndarray | None = None
    tool_cosines: np.ndarray | None = None
    query_vector: np.ndarray | None = None
    sentences: list[Scores] | None = None

    @property
    def semantic(self) -> np.ndarray | None:
        """Each plugin's best cosine: to its sentence, best tool or best field (max-sim)."""
        parts = [
            p for p in (self.semantic_plugin, self.semantic_tool, self.semantic_field)
            if p is not None
        ]  # fmt: skip
        return np.maximum.reduce(parts) if parts else None


def sentences_of(index: CatalogIndex, query: str) -> list[str]:
    """The sentences of ``query`` ranked on their own: none unless it has two with terms."""
    sentences = [c for c in split_clauses(query) if index.analyzer.terms(c)]
    return sentences if len(sentences) > 1 else []


def score_queries(index: CatalogIndex, queries: Sequence[str], semantic: bool) -> list[Scores]:
    """Every query's :class:`Scores` (the embeddings of all queries in one batch)."""
    split = [sentences_of(index, q) for q in queries]
    vectors: np.ndarray | None = None
    if semantic and index.semantic and index.embedder is not None and queries:
        texts = [*queries, *(s for parts in split for s in parts)]
        vectors = index.embedder.embed(texts).astype(np.float32, copy=False)
    out = []
    at = len(queries)
    for number, query in enumerate(queries):
        whole = _lexical(index, query)
        if vectors is not None:
            _semantic(index, whole, vectors[number], fields=True)
        if split[number]:
            whole.sentences = []
            for sentence in split[number]:
                part = _lexical(index, sentence, plugin=False)
                if vectors is not None:
                    _semantic(index, part, vectors[at], fields=False)
                at += 1
                whole.sentences.append(part)
        out.append(whole)
    return out


def _lexical(index: CatalogIndex, text: str, plugin: bool = True) -> Scores:
    terms = list(dict.fromkeys(index.analyzer.terms(text)))
    count = len(index.plugins)
    tool_rows = index.tool_lexical.scores(terms)
    lexical_plugin = index.plugin_lexical.scores(terms) if plugin else np.zeros(count, np.float32)
    return Scores(terms, lexical_plugin, index.tools.best(tool_rows, count, 0.0), tool_rows)


def _semantic(index: CatalogIndex, scores: Scores, vector: np.ndarray, fields: bool) -> None:
    count = len(index.plugins)
    assert index.sentence_vectors is not None and index.tool_vectors is not None
    scores.query_vector = vector
    scores.semantic_plugin = index.sentence_vectors @ vector
    scores.tool_cosines = index.tool_vectors @ vector if len(index.tool_vectors) else np.zeros(0)
    scores.semantic_tool = index.tools.best(scores.tool_cosines, count, -1.0)
    if fields and index.field_vectors is not None and len(index.field_vectors):
        scores.semantic_field = index.fields_of.best(index.field_vectors @ vector, count, -1.0)
