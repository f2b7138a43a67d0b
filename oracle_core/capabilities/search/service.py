"""Capability search: which plugins fit a short task description, best first.

BM25 over plugin and tool documents (every field once) and, by default, the cosine of
wordllama's offline static embeddings to what each plugin is for, to its tools and to its
short fields, are z-scored across the catalog per query and added (:mod:`.fusion`). The fit
rule (:mod:`.fit`) then decides, on the query as a whole, whether anything is plausibly
related: a query gets its ranked candidates or, when nothing is, none.

The index is built on the first search, not when the oracle is built; embeddings are kept
per plugin digest under ``$ORACLE_HOME/search`` (:mod:`.vectors`), so adding or upgrading one
plugin embeds that plugin alone.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from oracle_core.capabilities.search.analyzer import Analyzer
from oracle_core.capabilities.search.embeddings import Embedder
from oracle_core.capabilities.search.explain import explain_candidates
from oracle_core.capabilities.search.fit import (
    FIT,
    FitRule,
    Match,
    covers,
    knows_a_word,
    match,
    paired_cosine,
    passes,
    plausible,
    query_fits,
    short,
)
from oracle_core.capabilities.search.fusion import (
    DEFAULT,
    FUSIONS,
    Fusion,
    combine,
    features,
    features_of,
)
from oracle_core.capabilities.search.index import CatalogIndex
from oracle_core.capabilities.search.lexical import BM25_B, BM25_K1
from oracle_core.capabilities.search.scoring import Scores, score_queries
from oracle_core.capabilities.search.vectors import VectorStore
from oracle_core.plugins.registry import Plugin, Registry

if TYPE_CHECKING:
    from oracle_core.settings import Settings

MAX_CANDIDATES = 6
"""Candidates a query returns at most."""

MAX_MATCHED_TOOLS = 3
"""Tool names a candidate lists at most (the tools that matched, best first)."""

TOOL_COSINE = 0.45
"""A tool whose words do not match is still listed as matched when it is this close."""

EMBED_FIELDS = True
"""Embed short fields one by one and score a plugin by its best match (max-sim)."""

Mode = Literal["bm25", "lexical", "semantic", "fused", "z-fusion", "learned"]
"""``bm25``: the plugin documents' BM25 alone; ``lexical``: BM25 of plugin and tool documents
fused (each sentence too); ``semantic``: the embeddings alone; ``fused``: the default
fusion; ``z-fusion`` and ``learned``: one shipped fusion by name."""


@dataclass(frozen=True)
class Candidate:
    """A plugin that fits a query.

    Attributes:
        plugin: the plugin.
        score: its fused score (higher is better; comparable within one query).
        tools: its tools that matched the query, best first (at most
            :data:`MAX_MATCHED_TOOLS`).
        match: ``strong`` or ``weak`` (see :func:`~.fit.match`).
    """

    plugin: Plugin
    score: float
    tools: tuple[str, ...]
    match: Match = "strong"


class CapabilitySearch:
    """Search over one registry's non-silent plugins; one per oracle, built on first use.

    Args:
        registry: the plugins to search.
        cache: the folder under which embeddings are kept (``None``: not kept).
        embedder: the semantic ranker's embedder (``None``: lexical only).
        fusion: how scores are fused (default: the tuned one).
        fit: the fit rule's floors.
        fields: embed short fields one by one (max-sim).
        analyzer: how texts become terms (default: stemmed English).
        k1: BM25's term frequency saturation.
        b: BM25's document length normalization.
    """

    FUSIONS = tuple(FUSIONS)
    """The shipped fusions' names (``rank`` takes each as a mode)."""

    def __init__(
        self,
        registry: Registry,
        cache: Path | None = None,
        embedder: Embedder | None = None,
        *,
        fusion: Fusion = DEFAULT,
        fit: FitRule = FIT,
        fields: bool = EMBED_FIELDS,
        analyzer: Analyzer | None = None,
        k1: float = BM25_K1,
        b: float = BM25_B,
    ) -> None:
        self.registry = registry
        self.cache = cache
        self.embedder = embedder
        self.fusion = fusion
        self.fit = fit
        self.fields = fields
        self.analyzer = analyzer if analyzer is not None else Analyzer()
        self.bm25_parameters = (k1, b)
        self._index: CatalogIndex | None = None
        self._lock = threading.Lock()

    @classmethod
    def for_settings(cls, registry: Registry, settings: Settings) -> CapabilitySearch:
        """The search an oracle with ``settings`` uses: cached under ``$ORACLE_HOME/search``."""
        from oracle_core.capabilities.search.embeddings import embedder_for

        return cls(registry, settings.home / "search", embedder_for(settings))

    @property
    def index(self) -> CatalogIndex:
        """The index, built (embeddings read from the cache where it has them) on first use."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    name = self.embedder.name if self.embedder is not None else "lexical"
                    k1, b = self.bm25_parameters
                    index = CatalogIndex(
                        self.analyzer,
                        self.embedder,
                        VectorStore.for_embedder(self.cache, name),
                        self.fields,
                        k1,
                        b,
                    )
                    index.sync(self.registry)
                    self._index = index
        return self._index

    def update(self, registry: Registry) -> None:
        """Follow ``registry``: plugins added, removed or upgraded are indexed alone."""
        with self._lock:
            self.registry = registry
            if self._index is not None:
                self._index.sync(registry)

    # -- scoring -----------------------------------------------------------------------------

    def scores(self, queries: Sequence[str], semantic: bool = True) -> list[Scores]:
        """The raw scores of each query (for the fit rule, ``--explain`` and the benchmark)."""
        return score_queries(self.index, queries, semantic and self.embedder is not None)

    def fused(self, scores: Scores, mode: Mode = "fused") -> np.ndarray:
        """The fused score of every plugin row for one query's ``scores`` under ``mode``."""
        index = self.index
        alive = index.alive
        if mode == "bm25":
            return scores.lexical_plugin
        fusion = FUSIONS.get(mode, self.fusion)
        if mode == "lexical":
            lexical = _lexical_only(scores)
            return combine(features(lexical, alive, fusion), fusion)
        if mode == "semantic":
            semantic = scores.semantic
            return semantic if semantic is not None else np.zeros(len(alive), np.float32)
        return combine(features(scores, alive, fusion), fusion)

    def _ranked_rows(
        self, values: np.ndarray, depth: int, matched: np.ndarray | None = None
    ) -> list[int]:
        """The ``depth`` best live rows by ``values`` (only ``matched`` ones when given)."""
        alive = self.index.alive if matched is None else self.index.alive & matched
        if alive.all() and np.isfinite(values).all():  # nothing masked: the values themselves
            masked, finite = values, len(values)
        else:
            masked = np.where(alive, values, -np.inf)
            finite = int(np.isfinite(masked).sum())
        depth = min(depth, finite)
        if depth <= 0:
            return []
        top = np.argpartition(-masked, depth - 1)[:depth]
        return [int(r) for r in top[np.argsort(-masked[top], kind="stable")]]

    def _matched_tools(self, scores: Scores, row: int) -> tuple[str, ...]:
        index = self.index
        ranked: list[tuple[float, float, str]] = []
        for tool_row in index.tools.of(row).tolist():
            lexical = float(scores.tool_rows[tool_row])
            semantic = (
                float(scores.tool_cosines[tool_row]) if scores.tool_cosines is not None else -1.0
            )
            if lexical > 0 or semantic >= TOOL_COSINE:
                ranked.append((lexical, semantic, index.tool_names[tool_row]))
        ranked.sort(key=lambda item: (-item[0], -item[1]))
        return tuple(name for _, _, name in ranked[:MAX_MATCHED_TOOLS])

    # -- public ------------------------------------------------------------------------------

    def search(self, queries: Sequence[str], limit: int = MAX_CANDIDATES) -> list[list[Candidate]]:
        """The candidates of each query, in query order: at most ``limit``, none when nothing
        is plausibly related."""
        index = self.index
        if not index.row_of:
            return [[] for _ in queries]
        scored = self.scores(queries)
        parts = features_of(scored, index.alive, self.fusion)  # all queries at once
        return [
            self._fitting(scores, limit, combine(p, self.fusion))
            for scores, p in zip(scored, parts, strict=True)
        ]

    def _fitting(self, scores: Scores, limit: int, fused: np.ndarray) -> list[Candidate]:
        """One query's candidates after the fit rule (see :mod:`.fit`), ``fused`` its fused
        scores."""
        index = self.index
        rows = self._ranked_rows(fused, max(limit, self.fit.depth) * 3)
        semantic = scores.semantic is not None
        wordless = not knows_a_word(index, scores)
        is_short = short(scores, self.fit)

        def measure(row: int) -> tuple[bool, float, float, bool, float]:
            listed, similarity, evidence = plausible(index, scores, row, self.fit)
            covered = covers(index, scores, row)
            fit = (similarity, evidence, self.fit, semantic, covered, wordless, None, is_short)
            # The known words' cosine only ever helps: it is read (and those words embedded)
            # for the candidates that do not fit without it.
            paired = similarity if passes(*fit) else paired_cosine(index, scores, row)
            return listed, similarity, evidence, covered, paired

        # Measured lazily: the first ``depth`` rows decide the query, the rest only until
        # ``limit`` are listed.
        measured = [measure(row) for row in rows[: self.fit.depth]]
        first = [(c, e, v, p) for _, c, e, v, p in measured]
        if not query_fits(first, self.fit, semantic, wordless, is_short):
            return []
        found: list[Candidate] = []
        for number, row in enumerate(rows):
            if len(found) >= limit:
                break
            listed, similarity, evidence, covered, paired = (
                measured[number] if number < len(measured) else measure(row)
            )
            if listed:
                plugin = index.plugins[row]
                assert plugin is not None
                fits = passes(
                    similarity, evidence, self.fit, semantic, covered, wordless, paired, is_short
                )
                found.append(
                    Candidate(
                        plugin,
                        round(float(fused[row]), 6),
                        self._matched_tools(scores, row),
                        match(fits),
                    )
                )
        return found

    def rank(
        self, queries: Sequence[str], mode: Mode = "fused", depth: int = 10
    ) -> list[list[str]]:
        """Plugin names of each query's ranking, best first, without the fit rule.

        For measuring rankers (``bench/search.py``).
        """
        index = self.index
        if not index.row_of:
            return [[] for _ in queries]
        semantic = mode not in ("bm25", "lexical")
        out = []
        for scores in self.scores(queries, semantic=semantic):
            if mode == "bm25":
                scores.sentences = None
            lexical = not semantic or scores.semantic is None
            matched = _lexically_matched(scores) if lexical else None
            rows = self._ranked_rows(self.fused(scores, mode), depth, matched)
            out.append([index.plugins[r].name for r in rows])  # type: ignore[union-attr]
        return out

    def explain(
        self, queries: Sequence[str], limit: int = MAX_CANDIDATES
    ) -> list[list[dict[str, Any]]]:
        """Why each candidate of each query was found (see :mod:`.explain`)."""
        found = self.search(queries, limit)
        return [
            explain_candidates(self.index, self.fusion, self.fit, scores, candidates)
            for scores, candidates in zip(self.scores(queries), found, strict=True)
        ]


def _lexical_only(scores: Scores) -> Scores:
    """``scores`` without their semantic parts (the lexical ranking of the benchmark)."""
    sentences = [_lexical_only(s) for s in scores.sentences] if scores.sentences else None
    return Scores(scores.terms, scores.lexical_plugin, scores.lexical_tool, scores.tool_rows,
                  sentences=sentences)  # fmt: skip


def _lexically_matched(scores: Scores) -> np.ndarray:
    """The rows any query word matched: in their document, a tool, or a sentence's tool."""
    matched = (scores.lexical_plugin > 0) | (scores.lexical_tool > 0)
    for sentence in scores.sentences or ():
        matched |= sentence.lexical_tool > 0
    return np.asarray(matched)
