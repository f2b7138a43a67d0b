"""How the lexical and semantic scores of a query become one ranking.

Each raw score is z-scored across the catalog for this query (so BM25's unbounded scores
and cosines in [-1, 1] are on one scale: how far a plugin stands out of the catalog), and
the z-scores are added with fixed coefficients. The best sentence of a request of several
(each ranked against the tools) adds its own fused score, so a short second request is not
lost below the part with the most words.

Two sets of coefficients are shipped, both chosen on the tuning sets only (``bench/search.py
--tune``): :data:`Z_FUSION` (a grid over the lexical weight) and :data:`LEARNED` (a logistic
ranker over the same features). :data:`DEFAULT` is the one the tuning sets preferred.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from oracle_core.capabilities.search.scoring import Scores

FEATURES = ("lexical_plugin", "lexical_tool", "semantic", "semantic_plugin", "sentence")
"""The features a fusion weighs: z-scores of BM25 (plugin document, best tool), of the best
cosine (max-sim over the plugin's sentence, tools and short fields), of the plugin
sentence's cosine alone, and the best sentence's fused score."""


@dataclass(frozen=True)
class Fusion:
    """Coefficients of the z-scored features (see :data:`FEATURES`).

    Attributes:
        name: what the benchmark calls it.
        weights: one coefficient per feature (a missing one is 0).
        lexical_weight: the weight of lexical z-scores against semantic ones within a
            sentence's score.
        sentence_rank_k: when positive, a sentence scores its plugins by rank,
            ``1 / (k + rank)``, rather than by z-score, so each sentence's first plugin
            stands out however the sentence's scores spread.
        sentence_floor: a sentence ranks only the plugins whose fused z-score in it is at
            least this (a greeting or a name in a sentence of its own ranks nothing). A
            z-score cannot exceed the square root of the catalog's size, so in a small
            catalog the floor is at most half of that.
    """

    name: str
    weights: Mapping[str, float] = field(default_factory=dict)
    lexical_weight: float = 0.75
    sentence_rank_k: float = 0.0
    sentence_floor: float = 0.0


def zscore(values: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """``values`` minus their mean over the live rows, over their deviation (0 when flat)."""
    live = values[alive]
    if not len(live):
        return np.zeros_like(values, dtype=np.float32)
    spread = float(live.std())
    if spread < 1e-9:
        return np.zeros_like(values, dtype=np.float32)
    return ((values - float(live.mean())) / spread).astype(np.float32)


def features(scores: Scores, alive: np.ndarray, fusion: Fusion) -> dict[str, np.ndarray]:
    """The z-scored features of one query (semantic ones only with embeddings)."""
    return features_of([scores], alive, fusion)[0]


def _base(scores: Scores) -> dict[str, np.ndarray]:
    base = {"lexical_plugin": scores.lexical_plugin, "lexical_tool": scores.lexical_tool}
    semantic = scores.semantic
    if semantic is not None and scores.semantic_plugin is not None:
        base |= {"semantic": semantic, "semantic_plugin": scores.semantic_plugin}
    return base


def features_of(
    queries: Sequence[Scores], alive: np.ndarray, fusion: Fusion
) -> list[dict[str, np.ndarray]]:
    """:func:`features` of each query, computed for all of them (and all their sentences) in
    a few array operations rather than a few a query and sentence."""
    if not queries:
        return []
    bases = [_base(q) for q in queries]
    if any(b.keys() != bases[0].keys() for b in bases):  # mixed: one query at a time
        return [features_of([q], alive, fusion)[0] for q in queries]
    width = len(bases[0])
    z = zscore_rows(np.stack([v for b in bases for v in b.values()]), alive)
    out = [dict(zip(b, z[i * width : (i + 1) * width], strict=True)) for i, b in enumerate(bases)]
    sentences = [s for q in queries for s in (q.sentences or ())]
    if sentences:
        each = _sentences(sentences, alive, fusion)  # one row a sentence
        if fusion.sentence_rank_k > 0:
            floor = min(fusion.sentence_floor, 0.5 * float(np.sqrt(max(int(alive.sum()) - 1, 1))))
            each = _ranked_over(each, alive, fusion.sentence_rank_k, floor)
        at = 0
        for query, parts in zip(queries, out, strict=True):
            count = len(query.sentences or ())
            if count:
                parts["sentence"] = np.asarray(each[at : at + count].max(axis=0), np.float32)
            at += count
    return out


def zscore_rows(values: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """:func:`zscore` of each row of ``values`` at once."""
    every = bool(alive.all())
    live = values if every else values[:, alive]
    if not live.shape[1]:
        return np.zeros_like(values, dtype=np.float32)
    centred = values - live.mean(axis=1, keepdims=True)
    deviation = centred if every else centred[:, alive]
    spread = np.sqrt(np.mean(deviation * deviation, axis=1, keepdims=True))  # as std() does
    flat = spread < 1e-9
    if flat.any():
        return np.where(flat, 0.0, centred / np.where(flat, 1.0, spread)).astype(np.float32)
    return np.asarray(centred / spread, dtype=np.float32)


def _ranked_over(values: np.ndarray, alive: np.ndarray, k: float, floor: float) -> np.ndarray:
    """``1 / (k + rank)`` of each row's live values of at least ``floor`` that rank among the
    row's first 50 (0 elsewhere). Ranks are found among the few values that reach the floor:
    every value ranked above one that reaches it reaches it too."""
    out = np.zeros(values.shape, dtype=np.float32)
    rows, columns = np.nonzero((values >= floor) & alive)
    if not len(rows):
        return out
    order = np.lexsort((-values[rows, columns], rows))  # by row, then best first
    rows, columns = rows[order], columns[order]
    rank = np.arange(len(rows)) - np.searchsorted(rows, rows)
    kept = rank < 50
    out[rows[kept], columns[kept]] = 1.0 / (k + 1 + rank[kept].astype(np.float32))
    return out


def _sentences(sentences: list[Scores], alive: np.ndarray, fusion: Fusion) -> np.ndarray:
    """Each sentence's fused score against the tools, one row a sentence (see
    :func:`_sentence`), computed for all sentences at once."""
    lexical = zscore_rows(np.stack([s.lexical_tool for s in sentences]), alive)
    semantic = [s.semantic for s in sentences]
    if any(v is None for v in semantic):
        return np.stack([_sentence(s, alive, fusion) for s in sentences])
    return fusion.lexical_weight * lexical + zscore_rows(np.stack(semantic), alive)  # type: ignore[arg-type]


def _sentence(scores: Scores, alive: np.ndarray, fusion: Fusion) -> np.ndarray:
    """One sentence's fused score against the tools: lexical and semantic z-scores added."""
    lexical = zscore(scores.lexical_tool, alive)
    semantic = scores.semantic
    if semantic is None:
        return lexical
    return np.asarray(fusion.lexical_weight * lexical + zscore(semantic, alive))


def combine(parts: Mapping[str, np.ndarray], fusion: Fusion) -> np.ndarray:
    """The fused score of every row: the weighted sum of the features present.

    Without embeddings the lexical features alone rank, with the lexical weight taken as 1.
    """
    semantic = "semantic" in parts
    total: np.ndarray | None = None
    for name, values in parts.items():
        weight = fusion.weights.get(name, 0.0)
        if not semantic and name.startswith("lexical"):
            weight /= max(fusion.lexical_weight, 1e-9)  # lexical alone: its own scale
        if weight:
            total = weight * values if total is None else total + weight * values
    if total is None:
        count = len(next(iter(parts.values()))) if parts else 0
        return np.zeros(count, np.float32)
    return total


Z_FUSION = Fusion(
    "z-fusion",
    MappingProxyType(
        {
            "lexical_plugin": 0.5,
            "lexical_tool": 0.125,
            "semantic": 0.5,
            "semantic_plugin": 0.5,
            "sentence": 80.0,
        }
    ),
    lexical_weight=0.5,
    sentence_rank_k=2.0,
    sentence_floor=8.0,
)
"""Z-scored BM25 and cosine added (lexical weighted 0.5, max-sim and the plugin sentence's
cosine half each), and each sentence's first plugins by rank (weight 80 at ``1/(2 + rank)``:
they come first), chosen by a grid on the tuning sets (``bench/search.py --tune``): mean
recall@5 0.910 over BFCL-live tune and both Seal-Tools ``test_out_domain`` catalogs, against
0.885 for z-scored sentences and 0.80 without sentences."""

LEARNED = Fusion(
    "learned",
    MappingProxyType(
        {
            "lexical_plugin": 0.373,
            "lexical_tool": 1.357,
            "semantic": 0.8,
            "semantic_plugin": -0.2,
            "sentence": 41.141,
        }
    ),
    lexical_weight=0.5,
    sentence_rank_k=2.0,
    sentence_floor=8.0,
)
"""A logistic ranker's coefficients over :data:`FEATURES`, fitted on the first 30
candidates of every tuning query (``bench/search.py --tune``). Mean recall@5 on the tuning
sets 0.903 against :data:`Z_FUSION`'s 0.910, so it is not the default."""

DEFAULT = Z_FUSION
"""The fusion search uses."""

FUSIONS: Mapping[str, Fusion] = MappingProxyType({f.name: f for f in (Z_FUSION, LEARNED)})
"""Every shipped fusion by name (the benchmark prints each)."""
