"""Capability search: which plugins fit a short task description, best first.

Up to four rankings are fused by weighted reciprocal rank fusion (RRF): BM25 over plugin
documents, BM25 over tool documents (a plugin ranks by its best tool), and, with an
embedder, cosine similarity of the query to plugin and tool embeddings. A request of
several sentences ("Convert 20 euros to dollars. Then book a table for two.") often asks
for several capabilities: each sentence is ranked on its own too (:func:`split_clauses`),
and a plugin's best rank in any sentence counts (:data:`CLAUSE_WEIGHT`), so every part of
the request finds its plugin near the top, not only the part with the most words.

A candidate is only returned when it really fits: its document must cover at least
:data:`MIN_COVERAGE` of the query's term weight (IDF) and enough of it, words matched only
in tool descriptions and parameters counting :data:`WEAK_FIELD_SHARE` of theirs, or match
enough rare terms (:data:`MIN_EVIDENCE`) in a long query, or be at least
:data:`MIN_SIMILARITY` close. The thresholds were calibrated on data
(``bench/search.py --calibrate``), so a query that nothing fits gets no candidates instead
of six poor ones.

The index is built on the first search, not when the oracle is built, and is cached under
``$ORACLE_HOME/search`` (see :mod:`oracle_core.capabilities.index`).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

import numpy as np

from oracle_core.capabilities.index import (
    BM25_B,
    BM25_K1,
    NAMING_FIELDS,
    PLUGIN_WEIGHTS,
    TOOL_WEIGHTS,
    Analyzer,
    CatalogIndex,
    catalog_digest,
    term_matrix,
    term_postings,
)
from oracle_core.plugins.registry import Plugin, Registry

if TYPE_CHECKING:
    from oracle_core.capabilities.embeddings import Embedder
    from oracle_core.settings import Settings

MAX_CANDIDATES = 6
"""Candidates a query returns at most."""

MAX_MATCHED_TOOLS = 3
"""Tool names a candidate lists at most (the tools that matched, best first)."""

MIN_EVIDENCE = 1.15
"""Matched IDF, in units of a term found in one plugin only, that fits whatever the query.

One word can never reach it; on Seal-Tools ``test_out_domain`` the right plugin has at
least 1.3 in 95% of the queries (``bench/search.py --calibrate``).
"""

MIN_COVERAGE = 0.5
"""Share of a short query's IDF a plugin must contain to fit (with :data:`MIN_TERM_EVIDENCE`)."""

MIN_TERM_EVIDENCE = 0.5
"""Matched IDF a covering plugin still needs, so common words ("name", "data") alone never fit."""

WEAK_FIELD_SHARE = 0.5
"""How much a query word counts toward covering a short query when a plugin holds it only in
its long fields.

A word found in the plugin's name, title, summary, ``when_to_use``, examples, tags, category
or tool names (:data:`~oracle_core.capabilities.index.NAMING_FIELDS`) counts its full IDF;
one found only in tool descriptions or parameter texts counts this share of it in the
:data:`MIN_COVERAGE` rule. So a lone generic word ("help", "hello", "good") that some
parameter mentions is no fit, while the same word in what the plugin is for still is. The
:data:`MIN_EVIDENCE` rule (several rare words) counts every match fully, and ranking is not
affected. Chosen on ``test_out_domain`` and half of the benchmark's off-topic requests.
"""

MIN_SIMILARITY = 0.7
"""Cosine similarity that is a fit without matching words; off-topic requests stay below it."""

RRF_K = 60
"""The reciprocal rank fusion constant of the whole query's rankings (the usual 60)."""

FUSION_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "lexical_plugin": 1.0,
        "lexical_tool": 1.0,
        "semantic_plugin": 0.0,
        "semantic_tool": 0.2,
    }
)
"""Weight of each ranking in the fusion, chosen by a grid on Seal-Tools ``test_out_domain``.

wordllama's static embeddings rank below BM25 on that data, so their tool ranking counts a
fifth of a lexical one, and the plugin embeddings none (they still decide
:data:`MIN_SIMILARITY`).
"""

CLAUSE_WEIGHT = 1.0
"""Weight of a plugin's best sentence fusion against the whole query's (0 turns it off).

Chosen on Seal-Tools ``test_out_domain``, where most requests ask for three tools in three
sentences; anything from 0.5 to 2 ranks the same there.
"""

CLAUSE_K = 5
"""The RRF constant within one sentence: small, so a sentence's first plugin stands out.

With 60, a plugin ranked second in two sentences about the same topic beats the one plugin
that fits a third sentence; 2 to 10 rank the same on ``test_out_domain``.
"""

CLAUSE_CANDIDATES = 100
"""Tools a sentence's embedding is compared with: its best by BM25 (all of them would cost
a matrix product over the whole catalog per sentence)."""

_DEPTH = 50
"""Rows of each ranking that take part in the fusion."""

Mode = Literal["bm25", "lexical", "semantic", "fused"]
"""``bm25``: the plugin-document BM25 ranking alone (whole query); ``lexical``: it fused
with the tool documents' BM25, per sentence too; ``semantic``: the embeddings' rankings;
``fused``: all of them."""

_CLAUSE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


def split_clauses(query: str) -> list[str]:
    """The sentences of ``query``: split after ``.``, ``!``, ``?`` or ``;`` and a space, and
    at line breaks (empty parts left out)."""
    return [part for part in _CLAUSE_END.split(query) if part.strip()]


def _rrf_into(
    fused: np.ndarray, weight: float, values: np.ndarray, positive_only: bool, k: float
) -> None:
    """Add one ranking's weighted reciprocal ranks (its top :data:`_DEPTH` rows) to ``fused``.

    ``values`` holds one score per plugin, or one row of them per sentence (2-D, ranked row
    by row into the same rows of ``fused``); ``positive_only`` leaves out rows scoring 0.
    """
    if weight <= 0 or not values.shape[-1]:
        return
    scores = values.reshape(-1, values.shape[-1])
    into = fused.reshape(scores.shape)  # a view: adding to it adds to ``fused``
    depth = min(_DEPTH, scores.shape[1])
    top = np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
    top_scores = np.take_along_axis(scores, top, axis=1)
    order = np.argsort(-top_scores, axis=1, kind="stable")
    top = np.take_along_axis(top, order, axis=1)
    add = np.broadcast_to(weight / (k + 1 + np.arange(depth, dtype=np.float64)), top.shape)
    if positive_only:
        add = np.where(np.take_along_axis(top_scores, order, axis=1) > 0, add, 0.0)
    into[np.arange(len(top))[:, None], top] += add  # rows are distinct within a ranking


@dataclass(frozen=True)
class Candidate:
    """A plugin that fits a query.

    Attributes:
        plugin: the plugin.
        score: its fused score (higher is better; comparable within one query).
        tools: its tools that matched the query, best first (at most
            :data:`MAX_MATCHED_TOOLS`).
    """

    plugin: Plugin
    score: float
    tools: tuple[str, ...]


@dataclass
class _Ranking:
    """The rankings of the whole query (one score per plugin), or of each of its sentences
    (one row of scores per sentence)."""

    lexical_plugin: np.ndarray | None = None
    lexical_tool: np.ndarray | None = None  # per plugin: its best tool
    semantic_plugin: np.ndarray | None = None
    semantic_tool: np.ndarray | None = None  # per plugin: its best tool


@dataclass
class _Embedded:
    """One query's similarities: to every plugin and tool, and each sentence's to every tool."""

    plugin: np.ndarray
    tool_rows: np.ndarray
    clauses: np.ndarray  # (sentences, dimensions): each sentence's embedding


@dataclass
class _Scores:
    """One query's raw scores over every plugin row (and tool row), and its fit evidence."""

    lexical_plugin: np.ndarray
    lexical_tool: np.ndarray  # per plugin: its best tool
    tool_rows: np.ndarray  # per tool
    idf: np.ndarray  # per query term
    present: np.ndarray  # (terms, plugins): the plugin's document holds the term
    naming: np.ndarray  # (terms, plugins): ... in its naming fields
    rarest: float  # the IDF of a term that occurs in one plugin only
    semantic_plugin: np.ndarray | None = None
    semantic_tool: np.ndarray | None = None  # per plugin: its best tool
    semantic_tool_rows: np.ndarray | None = None
    clauses: _Ranking | None = None  # each sentence's, when there are several

    @property
    def total(self) -> float:
        """The query's IDF: the sum over its terms."""
        return float(self.idf.sum())


class CapabilitySearch:
    """Search over one registry's non-silent plugins; one per oracle, built on first use.

    Args:
        registry: the plugins to search.
        cache: the folder under which built indexes are kept (``None``: not cached).
        embedder: the semantic ranker's embedder (``None``: lexical only).
        plugin_weights: times each plugin field counts (default: the tuned ones).
        tool_weights: times each tool field counts.
        analyzer: how texts become terms (default: stemmed English).
        k1: BM25's term frequency saturation (default: the tuned one).
        b: BM25's document length normalization.
    """

    def __init__(
        self,
        registry: Registry,
        cache: Path | None = None,
        embedder: Embedder | None = None,
        *,
        plugin_weights: Mapping[str, int] = PLUGIN_WEIGHTS,
        tool_weights: Mapping[str, int] = TOOL_WEIGHTS,
        analyzer: Analyzer | None = None,
        k1: float = BM25_K1,
        b: float = BM25_B,
    ) -> None:
        self.registry = registry
        self.cache = cache
        self.embedder = embedder
        self.weights = (dict(plugin_weights), dict(tool_weights))
        self.analyzer = analyzer if analyzer is not None else Analyzer()
        self.bm25_parameters = (k1, b)
        self._index: CatalogIndex | None = None
        self._lock = threading.Lock()
        self._plugins: list[Plugin] = []
        self._tools_of: list[list[int]] = []
        self._with_tools = np.zeros(0, dtype=np.int64)
        self._tool_starts = np.zeros(0, dtype=np.int64)

    @classmethod
    def for_settings(cls, registry: Registry, settings: Settings) -> CapabilitySearch:
        """The search an oracle with ``settings`` uses: cached under ``$ORACLE_HOME/search``."""
        from oracle_core.capabilities.embeddings import embedder_for

        return cls(registry, settings.home / "search", embedder_for(settings))

    @property
    def index(self) -> CatalogIndex:
        """The index, loaded from the cache or built on first use."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._load_or_build()
        return self._index

    def _load_or_build(self) -> CatalogIndex:
        k1, b = self.bm25_parameters
        extra = [self.analyzer.name, f"bm25 k1={k1} b={b}", *NAMING_FIELDS]
        if self.embedder is not None:
            extra.append(self.embedder.name)
        folder = None
        index = None
        if self.cache is not None:
            folder = self.cache / catalog_digest(self.registry, extra, self.weights)
            index = CatalogIndex.load(folder, semantic=self.embedder is not None)
        if index is None:
            index = CatalogIndex.build(
                self.registry, self.analyzer, self.embedder, *self.weights, k1=k1, b=b
            )
            if folder is not None:
                index.save(folder)
        self._plugins = [self.registry.plugins[name] for name in index.plugins]
        self._tools_of = [[] for _ in index.plugins]
        for row, (plugin_row, _) in enumerate(index.tools):
            self._tools_of[plugin_row].append(row)
        self._with_tools = np.array([r for r, t in enumerate(self._tools_of) if t], dtype=np.int64)
        self._tool_starts = np.array([t[0] for t in self._tools_of if t], dtype=np.int64)
        return index

    # -- scoring ------------------------------------------------------------------------------

    def _clauses(self, query: str) -> list[list[str]]:
        """The terms of each sentence of ``query`` (in order, once), sentences without any
        left out."""
        clauses = [list(dict.fromkeys(self.analyzer.terms(c))) for c in split_clauses(query)]
        return [terms for terms in clauses if terms]

    def _sentences(self, query: str) -> list[str]:
        """The sentences of ``query`` that are ranked on their own (see :meth:`_scores`)."""
        if CLAUSE_WEIGHT <= 0:
            return []
        sentences = [c for c in split_clauses(query) if self.analyzer.terms(c)]
        return sentences if len(sentences) > 1 else []

    def _scores(
        self, query: str, embedded: _Embedded | None = None, *, clauses: bool = True
    ) -> _Scores:
        index = self.index
        count = len(index.plugins)
        sentences = self._clauses(query)
        terms = list(dict.fromkeys(t for sentence in sentences for t in sentence))
        # Every occurrence of a query term in a plugin document: (row, BM25 score, which term).
        plugin_rows, plugin_data, plugin_term = term_postings(index.plugin_bm25, terms)
        lexical = np.bincount(plugin_rows, plugin_data, minlength=count)
        # One row per query term: its BM25 score in each tool document.
        tool_terms = term_matrix(index.tool_bm25, terms, len(index.tools))
        tool_rows = tool_terms.sum(axis=0)
        present = np.zeros((len(terms), count), dtype=np.bool_)
        present[plugin_term, plugin_rows] = True
        naming = np.zeros((len(terms), count), dtype=np.bool_)
        naming_rows, _, naming_term = term_postings(index.naming_bm25, terms)
        naming[naming_term, naming_rows] = True
        frequency = np.array([index.document_frequency.get(t, 0) for t in terms], np.float64)
        idf = np.log(1 + (count - frequency + 0.5) / (frequency + 0.5))
        rarest = math.log(1 + (max(count, 1) - 0.5) / 1.5)  # the IDF of a term in one plugin
        scores = _Scores(
            lexical, self._best_tool(tool_rows), tool_rows, idf, present, naming, rarest
        )
        if clauses and CLAUSE_WEIGHT > 0 and len(sentences) > 1:
            # A sentence asks for one action: it is ranked against tool documents only.
            position = {term: i for i, term in enumerate(terms)}
            held_terms = [[position[t] for t in sentence] for sentence in sentences]
            # Row sums, not a matrix product: BLAS threads cost more than they save here.
            tool_scores = np.stack([tool_terms[rows].sum(axis=0) for rows in held_terms])
            ranking = _Ranking(lexical_tool=self._best_tool(tool_scores))
            if embedded is not None and len(embedded.clauses) == len(sentences):
                ranking.semantic_tool = self._best_tool(
                    self._reranked(tool_scores, embedded.clauses), fill=-1.0
                )
            scores.clauses = ranking
        if embedded is not None:
            scores.semantic_plugin = embedded.plugin
            scores.semantic_tool_rows = embedded.tool_rows
            scores.semantic_tool = self._best_tool(embedded.tool_rows, fill=-1.0)
        return scores

    def _reranked(self, lexical: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        """Each sentence's similarity to its :data:`CLAUSE_CANDIDATES` best tools by BM25.

        Args:
            lexical: (sentences, tools): each sentence's BM25 score of every tool.
            vectors: (sentences, dimensions): each sentence's embedding.

        Returns:
            (sentences, tools): the similarities, -1 for the tools not compared.
        """
        tool_vectors = self.index.tool_vectors
        assert tool_vectors is not None
        out = np.full(lexical.shape, -1.0, dtype=np.float32)
        depth = min(CLAUSE_CANDIDATES, lexical.shape[1])
        if not depth:
            return out
        top = np.argpartition(-lexical, depth - 1, axis=1)[:, :depth]
        for row, (rows, vector) in enumerate(zip(top, vectors, strict=True)):
            out[row, rows] = tool_vectors[rows] @ vector
        return out

    def _best_tool(self, tool_scores: np.ndarray, fill: float = 0.0) -> np.ndarray:
        """Each plugin's best tool score (``fill`` without tools); ``tool_scores`` may be 2-D."""
        best = np.full((*tool_scores.shape[:-1], len(self._plugins)), fill, dtype=np.float32)
        if tool_scores.shape[-1] == len(self._with_tools):  # one tool each: nothing to reduce
            best[..., self._with_tools] = tool_scores
        elif tool_scores.shape[-1]:  # tool rows are grouped by plugin, in plugin order
            best[..., self._with_tools] = np.maximum.reduceat(
                tool_scores.astype(np.float32, copy=False), self._tool_starts, axis=-1
            )
        return best

    def _fuse(self, scores: _Scores, mode: Mode) -> dict[int, float]:
        """The fused score of every plugin row some ranking of ``mode`` holds."""
        count = len(self._plugins)
        fused = np.zeros(count, dtype=np.float64)
        if mode == "bm25":
            _rrf_into(fused, 1.0, scores.lexical_plugin, True, RRF_K)
        else:
            whole = _Ranking(
                scores.lexical_plugin,
                scores.lexical_tool,
                scores.semantic_plugin,
                scores.semantic_tool,
            )
            self._fuse_ranking(fused, whole, mode, RRF_K)
            if scores.clauses is not None and scores.clauses.lexical_tool is not None:
                each = np.zeros(scores.clauses.lexical_tool.shape, dtype=np.float64)
                self._fuse_ranking(each, scores.clauses, mode, CLAUSE_K)
                fused += CLAUSE_WEIGHT * each.max(axis=0)  # a plugin's best sentence
        rows = np.flatnonzero(fused)
        return dict(zip(rows.tolist(), fused[rows].tolist(), strict=True))

    @staticmethod
    def _fuse_ranking(fused: np.ndarray, ranking: _Ranking, mode: Mode, k: float) -> None:
        weights = FUSION_WEIGHTS
        if mode in ("lexical", "fused"):
            for name, values in (
                ("lexical_plugin", ranking.lexical_plugin),
                ("lexical_tool", ranking.lexical_tool),
            ):
                if values is not None:
                    _rrf_into(fused, weights[name], values, True, k)
        if mode in ("semantic", "fused"):
            for name, values in (
                ("semantic_plugin", ranking.semantic_plugin),
                ("semantic_tool", ranking.semantic_tool),
            ):
                if values is not None:
                    _rrf_into(fused, weights[name], values, False, k)

    def covered(self, scores: _Scores, row: int, share: float = 1.0) -> float:
        """The query's IDF that plugin ``row`` matches; ``share`` of it for long-field words."""
        return float(self._covered(scores, np.array([row]), share)[0])

    @staticmethod
    def _covered(scores: _Scores, rows: np.ndarray, share: float) -> np.ndarray:
        naming, present = scores.naming[:, rows], scores.present[:, rows]
        return np.asarray(scores.idf @ np.where(naming, 1.0, np.where(present, share, 0.0)))

    def _fitting(self, scores: _Scores, rows: np.ndarray) -> np.ndarray:
        """Which of the plugin ``rows`` fit the query (see the module's docstring)."""
        fits = np.zeros(len(rows), dtype=np.bool_)
        total = scores.total
        if total > 0:
            evidence = self._covered(scores, rows, 1.0) / scores.rarest
            covered = self._covered(scores, rows, WEAK_FIELD_SHARE)
            fits |= evidence >= MIN_EVIDENCE  # several rare words
            fits |= (covered / total >= MIN_COVERAGE) & (
                covered / scores.rarest >= MIN_TERM_EVIDENCE
            )
        if scores.semantic_plugin is not None and scores.semantic_tool is not None:
            similarity = np.maximum(scores.semantic_plugin[rows], scores.semantic_tool[rows])
            fits |= similarity >= MIN_SIMILARITY
        return fits

    def _matched_tools(self, scores: _Scores, row: int) -> tuple[str, ...]:
        ranked: list[tuple[float, float, str]] = []
        for tool_row in self._tools_of[row]:
            lexical = float(scores.tool_rows[tool_row])
            semantic = (
                float(scores.semantic_tool_rows[tool_row])
                if scores.semantic_tool_rows is not None
                else -1.0
            )
            if lexical > 0 or semantic >= MIN_SIMILARITY:
                ranked.append((lexical, semantic, self.index.tools[tool_row][1]))
        ranked.sort(key=lambda item: (-item[0], -item[1]))
        return tuple(name for _, _, name in ranked[:MAX_MATCHED_TOOLS])

    def _embedded(self, queries: Sequence[str]) -> list[_Embedded | None]:
        """Each query's similarities to the catalog (``None`` for all without an embedder).

        The queries and their sentences are embedded in one batch and compared in one
        matrix product per document kind.
        """
        index = self.index
        plugin_vectors, tool_vectors = index.plugin_vectors, index.tool_vectors
        if self.embedder is None or plugin_vectors is None or tool_vectors is None:
            return [None] * len(queries)
        if not queries:
            return []
        texts = list(queries)
        spans: list[tuple[int, int]] = []
        for query in queries:
            start = len(texts)
            texts += self._sentences(query)
            spans.append((start, len(texts)))
        matrix = self.embedder.embed(texts).astype(plugin_vectors.dtype, copy=False)
        whole = matrix[: len(queries)]
        to_plugins, to_tools = whole @ plugin_vectors.T, whole @ tool_vectors.T
        return [
            _Embedded(to_plugins[i], to_tools[i], matrix[start:end])
            for i, (start, end) in enumerate(spans)
        ]

    # -- public -------------------------------------------------------------------------------

    def search(self, queries: Sequence[str], limit: int = MAX_CANDIDATES) -> list[list[Candidate]]:
        """The candidates of each query, in query order: at most ``limit``, each one a fit."""
        results: list[list[Candidate]] = []
        if not self.index.plugins:
            return [[] for _ in queries]
        for query, embedded in zip(queries, self._embedded(queries), strict=True):
            scores = self._scores(query, embedded)
            fused = self._fuse(scores, "fused")
            ranked = sorted(fused.items(), key=lambda item: -item[1])
            fits = self._fitting(scores, np.array([row for row, _ in ranked], dtype=np.int64))
            found: list[Candidate] = []
            for (row, score), fit in zip(ranked, fits.tolist(), strict=True):
                if len(found) >= limit:
                    break
                if fit:
                    tools = self._matched_tools(scores, row)
                    found.append(Candidate(self._plugins[row], round(score, 6), tools))
            results.append(found)
        return results

    def rank(
        self, queries: Sequence[str], mode: Mode = "fused", depth: int = 10
    ) -> list[list[str]]:
        """Plugin names of each query's ranking, best first, without the fit threshold.

        For measuring rankers (``bench/search.py``); ``mode`` picks the lexical rankings,
        the semantic ones, or both fused.
        """
        if not self.index.plugins:
            return [[] for _ in queries]
        lexical_only = mode in ("bm25", "lexical")
        embedded = [None] * len(queries) if lexical_only else self._embedded(queries)
        ranked: list[list[str]] = []
        for query, one in zip(queries, embedded, strict=True):
            fused = self._fuse(self._scores(query, one, clauses=mode != "bm25"), mode)
            rows = sorted(fused, key=lambda row: -fused[row])[:depth]
            ranked.append([self._plugins[row].name for row in rows])
        return ranked
