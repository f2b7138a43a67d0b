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
        query_vector: the text's embedding.
        known_vector: the embedding of the text's words the catalog knows, when some words
            it does not know were left out (names, places, values: the fit rule compares
            it with its first candidates, so they never count against a match).
        sentences: each sentence's scores, when the text has several.
        text: the text (of a whole query; its known words are embedded when first read).
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
    known_vector: np.ndarray | None = None
    sentences: list[Scores] | None = None
    text: str = ""

    @property
    def semantic(self) -> np.ndarray | None:
        """Each plugin's best cosine: to its sentence, best tool or best field (max-sim;
        computed once for the parts it was computed of)."""
        plugin, tool, field = self.semantic_plugin, self.semantic_tool, self.semantic_field
        cached = self.__dict__.get("_semantic")  # (the parts it was computed of, the value)
        if cached is not None and cached[0] is plugin and cached[1] is tool and cached[2] is field:
            return cached[3]  # type: ignore[no-any-return]
        parts = [p for p in (plugin, tool, field) if p is not None]
        value = np.maximum.reduce(parts) if parts else None
        self.__dict__["_semantic"] = (plugin, tool, field, value)
        return value

    def known_terms(self, index: CatalogIndex) -> list[str]:
        """The text's terms some plugin of ``index`` holds (computed once)."""
        cached = self.__dict__.get("_known_terms")
        if cached is None:
            frequency = index.plugin_lexical.frequency
            cached = [t for t in self.terms if frequency(t)]
            self.__dict__["_known_terms"] = cached
        return cached


def _clauses(index: CatalogIndex, query: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The terms of ``query`` and its sentences ranked on their own with their terms (none
    unless it has two with terms): each clause analysed once, the query's terms being its
    clauses' in order (clauses split at white space, which no word spans)."""
    clauses = [(c, terms) for c in split_clauses(query) if (terms := index.analyzer.terms(c))]
    terms = [t for _, clause in clauses for t in clause]
    return terms, clauses if len(clauses) > 1 else []


def score_queries(index: CatalogIndex, queries: Sequence[str], semantic: bool) -> list[Scores]:
    """Every query's :class:`Scores`.

    All queries, their sentences and their known words are embedded in one batch (each
    distinct text once) and compared with the catalog in two matrix products: every row
    with every plugin and tool, the queries' rows with the short fields. (Comparing each
    sentence with its 100 best tools by BM25 and the request's 100 best by meaning alone
    cost 0.7 to 1.4 points of recall@5 on the Seal-Tools tuning sets and saved no time.)
    """
    analysed = [_clauses(index, q) for q in queries]
    split = [[c for c, _ in clauses] for _, clauses in analysed]
    lexical = _lexical_all(
        index, [terms for terms, _ in analysed], [t for _, c in analysed for _, t in c]
    )
    whole, rest = lexical[: len(queries)], lexical[len(queries) :]
    parts: list[list[Scores]] = []
    for _, clauses in analysed:
        parts.append(rest[: len(clauses)])
        rest = rest[len(clauses) :]
    for scores, query in zip(whole, queries, strict=True):
        scores.text = query
    if semantic and index.semantic and index.embedder is not None and queries:
        texts = [*queries, *(s for sentences in split for s in sentences)]
        distinct = list(dict.fromkeys(texts))
        embedded = index.embedder.embed(distinct).astype(np.float32, copy=False)
        position = {text: at for at, text in enumerate(distinct)}
        vectors = embedded[[position[t] for t in texts]]
        flat = [piece for pieces in parts for piece in pieces]
        rows = len(queries) + len(flat)
        both, fields = index.products
        cosines = product(vectors[:rows], both)  # every query and sentence to every plugin
        to_fields = None if fields is None else product(vectors[: len(queries)], fields)
        _semantic(index, whole, vectors[: len(queries)], cosines[: len(queries)], to_fields)
        if flat:
            _sentence_semantic(index, flat, vectors[len(queries) : rows], cosines[len(queries) :])
    for scores, pieces in zip(whole, parts, strict=True):
        if pieces:
            scores.sentences = pieces
    return whole


_ONE_THREAD = 262_144
"""OpenBLAS computes a matrix product of at most this many multiply-adds (rows x columns x
depth) on one thread, a larger one on every core."""


def product(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``rows @ columns`` as products small enough for BLAS to run each on the calling thread.

    A search's product is small (a few dozen rows by a few thousand plugins): over several
    threads it takes half the time on an idle machine but waits for a busy core when other
    work runs (15 to 30 ms instead of 1 on the shared 2-core benchmark machine, for 4
    requests of several sentences), so it is cut into blocks of columns that each run on one.
    """
    count, depth = rows.shape
    if count * depth * columns.shape[1] <= _ONE_THREAD:
        return np.asarray(rows @ columns)
    if count == 1:  # a single row would be a matrix-vector product (another threshold)
        return product(np.concatenate([rows, rows]), columns)[:1]
    width = max(1, _ONE_THREAD // (count * depth))
    out = np.empty((count, columns.shape[1]), dtype=np.result_type(rows, columns))
    for start in range(0, columns.shape[1], width):
        np.matmul(rows, columns[:, start : start + width], out=out[:, start : start + width])
    return out


def _a_name_or_value(word: str) -> bool:
    """Whether ``word`` looks like a name, place or value: capitalized, holding a digit, or
    not plain ASCII (``Porto``, ``B-52``, ``Zürich``)."""
    return word[:1].isupper() or any(c.isdigit() for c in word) or not word.isascii()


def known_text(index: CatalogIndex, query: str) -> str:
    """``query`` without the names, places and values the catalog does not know, or ``""``
    when there are none (or nothing else): what the query asks, whatever it names."""
    words = query.split()
    if not any(_a_name_or_value(w) for w in words):
        return ""  # nothing to leave out (checked first: it is cheaper than analysing)
    kept, dropped, known = [], 0, 0
    for word in words:
        terms = index.analyzer.word_terms(word)
        if terms and any(index.plugin_lexical.frequency(t) for t in terms):
            kept.append(word)
            known += 1
        elif terms and _a_name_or_value(word):
            dropped += 1
        else:
            kept.append(word)
    return " ".join(kept) if known and dropped else ""


def known_vector(index: CatalogIndex, scores: Scores) -> np.ndarray | None:
    """The embedding of the query's known words (see :func:`known_text`), embedded when first
    read: the fit rule reads it only for candidates that do not fit without it."""
    if scores.known_vector is None and not scores.__dict__.get("_known_read"):
        scores.__dict__["_known_read"] = True
        embedder = index.embedder
        if scores.text and scores.semantic is not None and embedder is not None:
            text = known_text(index, scores.text)
            if text:
                scores.known_vector = embedder.embed([text]).astype(np.float32, copy=False)[0]
    return scores.known_vector


def known_cosine(index: CatalogIndex, scores: Scores, row: int) -> float:
    """The cosine of the query's known words to plugin ``row``'s closest vector (``-1``: none)."""
    vector = known_vector(index, scores)
    if vector is None or index.sentence_vectors is None or index.tool_vectors is None:
        return -1.0
    rows = [index.sentence_vectors[row][None, :], index.tool_vectors[index.tools.of(row)]]
    if index.field_vectors is not None and len(index.field_vectors):
        rows.append(index.field_vectors[index.field_ids[index.fields_of.of(row)]])
    return float(np.max(np.concatenate(rows) @ vector))


def _lexical_all(
    index: CatalogIndex, queries: list[list[str]], sentences: list[list[str]]
) -> list[Scores]:
    """The lexical scores of texts whose terms are given: the ``queries`` (scored against
    plugin and tool documents) then the ``sentences`` (against tool documents only), every
    text's postings summed in one pass."""
    texts = [list(dict.fromkeys(t)) for t in [*queries, *sentences]]
    count = len(index.plugins)
    tools = index.tool_lexical
    tool_rows = _summed_all([tools.term_scores(t) for t in texts], tools.rows)
    best = index.tools.best(tool_rows, count, 0.0)
    plugins = _summed_all(
        [index.plugin_lexical.term_scores(t) for t in texts[: len(queries)]], count
    )
    none = np.zeros(count, np.float32)
    return [
        Scores(terms, plugins[i] if i < len(queries) else none, best[i], tool_rows[i])
        for i, terms in enumerate(texts)
    ]


def _summed_all(texts: list[list[tuple[np.ndarray, np.ndarray]]], rows: int) -> np.ndarray:
    """Each text's row totals of its ``(rows, scores)`` postings (one row a text), summed in
    one ``bincount``."""
    flat = [posting for postings in texts for posting in postings]
    if not flat:
        return np.zeros((len(texts), rows), dtype=np.float32)
    # Each text's rows offset by its row block: one offset a posting list, repeated over its
    # rows (rather than one shifted copy of every posting list).
    lists = [p for p, _ in flat]
    starts = [i * rows for i, postings in enumerate(texts) for _ in postings]
    at = np.concatenate(lists) + np.repeat(np.array(starts, np.int64), [len(p) for p in lists])
    weights = np.concatenate([v for _, v in flat])
    total = np.bincount(at, weights=weights, minlength=len(texts) * rows)
    return total.astype(np.float32).reshape(len(texts), rows)


def _semantic(
    index: CatalogIndex,
    scores: list[Scores],
    vectors: np.ndarray,
    cosines: np.ndarray,
    to_fields: np.ndarray | None,
) -> None:
    """Add each query's cosines (``cosines``: one row a query, to every plugin then every
    tool; ``to_fields``: to every distinct short field) to its ``scores``."""
    count = len(index.plugins)
    to_plugins, to_tools = cosines[:, :count], cosines[:, count:]
    best_tools = index.tools.best(to_tools, count, -1.0)
    best_fields = None
    if to_fields is not None:
        best_fields = index.fields_of.best(to_fields, count, -1.0, index.field_ids)
    for row, one in enumerate(scores):
        one.query_vector = vectors[row]
        one.semantic_plugin = to_plugins[row]
        one.tool_cosines = to_tools[row]
        one.semantic_tool = best_tools[row]
        one.semantic_field = None if best_fields is None else best_fields[row]


def _sentence_semantic(
    index: CatalogIndex, scores: list[Scores], vectors: np.ndarray, cosines: np.ndarray
) -> None:
    """Add each sentence's cosines to every tool and to what each plugin is for (short
    fields are left out: a sentence asks for one action)."""
    count = len(index.plugins)
    to_plugins, to_tools = cosines[:, :count], cosines[:, count:]
    best = index.tools.best(to_tools, count, -1.0)
    closest = np.maximum(to_plugins, best)  # each sentence's max-sim, all at once
    for row, one in enumerate(scores):
        one.query_vector = vectors[row]
        one.semantic_plugin = to_plugins[row]
        one.tool_cosines = to_tools[row]
        one.semantic_tool = best[row]
        one.__dict__["_semantic"] = (one.semantic_plugin, one.semantic_tool, None, closest[row])
