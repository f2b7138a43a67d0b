"""Capability search: which plugins fit a short task description, best first.

Up to four rankings are fused by weighted reciprocal rank fusion (RRF): BM25 over plugin
documents, BM25 over tool documents (a plugin ranks by its best tool), and, with an
embedder, cosine similarity of the query to plugin and tool embeddings. A candidate is only
returned when it really fits: its document must cover at least :data:`MIN_COVERAGE` of the
query's term weight (IDF) and enough of it, words matched only in tool descriptions and
parameters counting :data:`WEAK_FIELD_SHARE` of theirs, or match enough rare terms
(:data:`MIN_EVIDENCE`) in a long query, or be at least :data:`MIN_SIMILARITY` close.
The thresholds were calibrated on data (``bench/search.py --calibrate``), so a query that
nothing fits gets no candidates instead of six poor ones.

The index is built on the first search, not when the oracle is built, and is cached under
``$ORACLE_HOME/search`` (see :mod:`oracle_core.capabilities.index`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

import numpy as np

from oracle_core.capabilities.index import (
    NAMING_FIELDS,
    PLUGIN_WEIGHTS,
    TOOL_WEIGHTS,
    Analyzer,
    CatalogIndex,
    catalog_digest,
    term_ids,
    term_rows,
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
"""The reciprocal rank fusion constant (the usual 60)."""

FUSION_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "lexical_plugin": 1.0,
        "lexical_tool": 1.0,
        "semantic_plugin": 0.0,
        "semantic_tool": 0.05,
    }
)
"""Weight of each ranking in the fusion, chosen by a grid on Seal-Tools ``test_out_domain``.

wordllama's static embeddings rank far below BM25 on that data, so they only break ties
among the lexical candidates (plugin embeddings still decide :data:`MIN_SIMILARITY`).
"""

_DEPTH = 50
"""Rows of each ranking that take part in the fusion."""

Mode = Literal["bm25", "lexical", "semantic", "fused"]
"""``bm25``: the plugin-document BM25 ranking alone; ``lexical``: it fused with the tool
documents' BM25; ``semantic``: the embeddings' rankings; ``fused``: all of them."""


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
class _Scores:
    """One query's raw scores over every plugin row (and tool row)."""

    lexical_plugin: np.ndarray
    lexical_tool: np.ndarray  # per plugin: its best tool
    tool_rows: np.ndarray  # per tool
    coverage_terms: list[tuple[float, np.ndarray]]  # (idf, plugin scores) per query term
    naming_terms: list[np.ndarray]  # per query term: which plugins hold it in naming fields
    rarest: float  # the IDF of a term that occurs in one plugin only
    semantic_plugin: np.ndarray | None = None
    semantic_tool: np.ndarray | None = None  # per plugin: its best tool
    semantic_tool_rows: np.ndarray | None = None


class CapabilitySearch:
    """Search over one registry's non-silent plugins; one per oracle, built on first use.

    Args:
        registry: the plugins to search.
        cache: the folder under which built indexes are kept (``None``: not cached).
        embedder: the semantic ranker's embedder (``None``: lexical only).
        plugin_weights: times each plugin field counts (default: the tuned ones).
        tool_weights: times each tool field counts.
        analyzer: how texts become terms (default: stemmed English).
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
    ) -> None:
        self.registry = registry
        self.cache = cache
        self.embedder = embedder
        self.weights = (dict(plugin_weights), dict(tool_weights))
        self.analyzer = analyzer if analyzer is not None else Analyzer()
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
        extra = [self.analyzer.name, *NAMING_FIELDS]
        if self.embedder is not None:
            extra.append(self.embedder.name)
        folder = None
        index = None
        if self.cache is not None:
            folder = self.cache / catalog_digest(self.registry, extra, self.weights)
            index = CatalogIndex.load(folder, semantic=self.embedder is not None)
        if index is None:
            index = CatalogIndex.build(self.registry, self.analyzer, self.embedder, *self.weights)
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

    def _scores(self, query: str, vector: np.ndarray | None) -> _Scores:
        index = self.index
        count = len(index.plugins)
        terms = list(dict.fromkeys(self.analyzer.terms(query)))
        vocab: dict[str, int] = index.plugin_bm25.vocab_dict
        known = {term: vocab[term] for term in terms if term in vocab}
        naming_vocab: dict[str, int] = index.naming_bm25.vocab_dict
        naming: list[np.ndarray] = []
        tool_ids = term_ids(index.tool_bm25, terms)
        coverage: list[tuple[float, np.ndarray]] = []
        lexical = np.zeros(count, dtype=np.float32)
        for term in terms:
            df = index.document_frequency.get(term, 0)
            idf = math.log(1 + (count - df + 0.5) / (df + 0.5))
            if term in known:
                row_scores = index.plugin_bm25.get_scores_from_ids([known[term]])
                lexical += row_scores
            else:
                row_scores = np.zeros(count, dtype=np.float32)
            coverage.append((idf, row_scores))
            held = np.zeros(count, dtype=np.bool_)
            if term in naming_vocab:
                held[term_rows(index.naming_bm25, naming_vocab[term])] = True
            naming.append(held)
        tool_rows = (
            index.tool_bm25.get_scores_from_ids(tool_ids)
            if tool_ids and index.tools
            else np.zeros(len(index.tools), dtype=np.float32)
        )
        rarest = math.log(1 + (max(count, 1) - 0.5) / 1.5)  # the IDF of a term in one plugin
        scores = _Scores(lexical, self._best_tool(tool_rows), tool_rows, coverage, naming, rarest)
        if (
            vector is not None
            and index.plugin_vectors is not None
            and index.tool_vectors is not None
        ):
            scores.semantic_plugin = index.plugin_vectors @ vector
            scores.semantic_tool_rows = index.tool_vectors @ vector
            scores.semantic_tool = self._best_tool(scores.semantic_tool_rows, fill=-1.0)
        return scores

    def _best_tool(self, tool_scores: np.ndarray, fill: float = 0.0) -> np.ndarray:
        best = np.full(len(self._plugins), fill, dtype=np.float32)
        if len(tool_scores):  # tool rows are grouped by plugin, in plugin order
            starts = self._tool_starts
            best[self._with_tools] = np.maximum.reduceat(tool_scores.astype(np.float32), starts)
        return best

    def _fuse(self, scores: _Scores, mode: Mode) -> dict[int, float]:
        rankings: list[tuple[str, np.ndarray, bool]] = []
        if mode == "bm25":
            rankings.append(("lexical_plugin", scores.lexical_plugin, True))
        if mode in ("lexical", "fused"):
            rankings += [
                ("lexical_plugin", scores.lexical_plugin, True),
                ("lexical_tool", scores.lexical_tool, True),
            ]
        if mode in ("semantic", "fused") and scores.semantic_plugin is not None:
            assert scores.semantic_tool is not None
            rankings += [
                ("semantic_plugin", scores.semantic_plugin, False),
                ("semantic_tool", scores.semantic_tool, False),
            ]
        fused: dict[int, float] = {}
        for name, values, positive_only in rankings:
            weight = FUSION_WEIGHTS[name]
            if weight <= 0 or not len(values):
                continue
            depth = min(_DEPTH, len(values))
            top = np.argpartition(-values, depth - 1)[:depth]
            top = top[np.argsort(-values[top], kind="stable")]
            for rank, row in enumerate(top.tolist()):
                if positive_only and values[row] <= 0:
                    break
                fused[row] = fused.get(row, 0.0) + weight / (RRF_K + rank + 1)
        return fused

    def covered(self, scores: _Scores, row: int, share: float = 1.0) -> float:
        """The query's IDF that plugin ``row`` matches; ``share`` of it for long-field words."""
        covered = 0.0
        for (idf, values), naming in zip(scores.coverage_terms, scores.naming_terms, strict=True):
            if naming[row]:
                covered += idf
            elif values[row] > 0:
                covered += share * idf
        return covered

    def _fits(self, scores: _Scores, row: int) -> bool:
        total = sum(idf for idf, _ in scores.coverage_terms)
        if total > 0:
            if self.covered(scores, row) / scores.rarest >= MIN_EVIDENCE:  # several rare words
                return True
            covered = self.covered(scores, row, WEAK_FIELD_SHARE)
            evidence = covered / scores.rarest
            if covered / total >= MIN_COVERAGE and evidence >= MIN_TERM_EVIDENCE:
                return True
        if scores.semantic_plugin is not None and scores.semantic_tool is not None:
            similarity = max(float(scores.semantic_plugin[row]), float(scores.semantic_tool[row]))
            return similarity >= MIN_SIMILARITY
        return False

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

    def _vectors(self, queries: Sequence[str]) -> list[np.ndarray | None]:
        if self.embedder is None or self.index.plugin_vectors is None or not queries:
            return [None] * len(queries)
        matrix = self.embedder.embed(list(queries))
        return [matrix[i] for i in range(len(queries))]

    # -- public -------------------------------------------------------------------------------

    def search(self, queries: Sequence[str], limit: int = MAX_CANDIDATES) -> list[list[Candidate]]:
        """The candidates of each query, in query order: at most ``limit``, each one a fit."""
        results: list[list[Candidate]] = []
        if not self.index.plugins:
            return [[] for _ in queries]
        for query, vector in zip(queries, self._vectors(queries), strict=True):
            scores = self._scores(query, vector)
            fused = self._fuse(scores, "fused")
            found: list[Candidate] = []
            for row, score in sorted(fused.items(), key=lambda item: -item[1]):
                if len(found) >= limit:
                    break
                if self._fits(scores, row):
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
        vectors = [None] * len(queries) if lexical_only else self._vectors(queries)
        ranked: list[list[str]] = []
        for query, vector in zip(queries, vectors, strict=True):
            fused = self._fuse(self._scores(query, vector), mode)
            rows = sorted(fused, key=lambda row: -fused[row])[:depth]
            ranked.append([self._plugins[row].name for row in rows])
        return ranked
