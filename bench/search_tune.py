"""Tuning of capability search on the tuning sets only (``bench/search.py --tune``).

Tuning sets: ``bfcl-live/tune.jsonl``, Seal-Tools ``test_out_domain`` (both catalogs) and the
even half of the off-topic requests. Each query's raw scores are computed once; the grids
then re-fuse them:

1. the fusion: lexical weight, best-tool weight, sentence weight, max-sim or sentence cosine;
2. a learned ranker: logistic regression over the same features, on the first 30 candidates
   of every tuning query (labels: the gold plugins);
3. the fit rule's floors: the query-level cosine and word-evidence floors against the
   tuning off-topic half, counting an on-topic request left empty twice as bad as an
   off-topic one given candidates.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import search_data as data

from oracle_core.capabilities.search import CapabilitySearch, WordLlamaEmbedder
from oracle_core.capabilities.search.fit import (
    FIT,
    FitRule,
    cosine,
    covers,
    query_fits,
    word_evidence,
)
from oracle_core.capabilities.search.fusion import FEATURES, Z_FUSION, Fusion, combine, features


@dataclass
class Set:
    """One tuning set: its search, queries' raw scores and gold plugin rows."""

    name: str
    search: CapabilitySearch
    scores: list[Any]
    gold: list[set[int]]
    off: list[Any]


def _sets() -> list[Set]:
    embedder = WordLlamaEmbedder()
    tuning_off, _ = data.off_topic()
    out = []
    catalogs = [
        ("bfcl tune", data.bfcl_catalog(), data.load_jsonl(data.BFCL / "tune.jsonl")),
        ("seal per-tool out", data.seal_catalog(False), data.load_jsonl(data.SEAL / "test_out_domain.jsonl")),
        ("seal by-field out", data.seal_catalog(True), data.load_jsonl(data.SEAL / "test_out_domain.jsonl")),
    ]  # fmt: skip
    for name, (registry, owner), rows in catalogs:
        search = CapabilitySearch(registry, embedder=embedder)
        labelled = data.labelled(rows, owner)
        row_of = search.index.row_of
        out.append(
            Set(
                name,
                search,
                search.scores([q for q, _ in labelled]),
                [{row_of[g] for g in gold} for _, gold in labelled],
                search.scores(tuning_off),
            )
        )
        print(f"scored {name}: {len(labelled)} queries", flush=True)
    return out


def _recall5(values: Sequence[np.ndarray], gold: Sequence[set[int]]) -> float:
    total = 0.0
    for v, g in zip(values, gold, strict=True):
        top = set(np.argpartition(-v, 5)[:5].tolist())
        total += len(top & g) / min(len(g), 5)
    return total / len(gold)


def _fused(s: Set, fusion: Fusion, which: list[Any] | None = None) -> list[np.ndarray]:
    alive = s.search.index.alive
    return [combine(features(x, alive, fusion), fusion) for x in (which or s.scores)]


def grid(sets: list[Set]) -> Fusion:
    """The fusion grid; prints the best settings and returns the best fusion."""
    best: tuple[float, Fusion] | None = None
    # A first wider grid (lexical weight 0.5 to 1.5, tool weight 0 to 1, z-scored sentences
    # with weight 0 to 8) settled the tool weight (0.25) and showed that z-scored sentences
    # lose Seal-Tools' several-tool requests: sentences now count by rank.
    for lw, sentence, floor, sem in itertools.product(
        (0.35, 0.5, 0.75), (40.0, 80.0), (0.0, 5.0, 8.0), ("maxsim", "sentence", "both")
    ):
        weights = {"lexical_plugin": lw, "lexical_tool": lw * 0.25, "sentence": sentence}
        weights |= {"maxsim": {"semantic": 1.0}, "sentence": {"semantic_plugin": 1.0},
                    "both": {"semantic": 0.5, "semantic_plugin": 0.5}}[sem]  # fmt: skip
        fusion = Fusion("z-fusion", weights, lw, 2.0, floor)
        recalls = [_recall5(_fused(s, fusion), s.gold) for s in sets]
        objective = float(np.mean(recalls))
        if best is None or objective > best[0]:
            best = (objective, fusion)
            print(f"  {objective:.4f} {[round(r, 3) for r in recalls]} lw={lw} "
                  f"sentence={sentence} floor={floor} semantic={sem}", flush=True)  # fmt: skip
    assert best is not None
    return best[1]


def learn(sets: list[Set], start: Fusion, steps: int = 400) -> Fusion:
    """A logistic ranker over :data:`FEATURES`, fitted on the first 30 candidates a query."""
    rows_x, rows_y = [], []
    for s in sets:
        alive = s.search.index.alive
        for scores, fused, gold in zip(s.scores, _fused(s, start), s.gold, strict=True):
            parts = features(scores, alive, start)
            top = np.argpartition(-fused, 30)[:30]
            for row in {*top.tolist(), *gold}:
                rows_x.append([float(parts[f][row]) if f in parts else 0.0 for f in FEATURES])
                rows_y.append(1.0 if row in gold else 0.0)
    x, y = np.array(rows_x), np.array(rows_y)
    w = np.zeros(x.shape[1])
    bias = 0.0
    # Features on one scale for the descent (the sentence rank term is ~0.3, z-scores ~10).
    spread = np.maximum(x.std(axis=0), 1e-9)
    xs = x / spread
    positive = y.mean()
    sample = np.where(y > 0, 0.5 / positive, 0.5 / (1 - positive))  # balanced classes
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(xs @ w + bias, -30, 30)))
        w -= 0.5 * (xs.T @ ((p - y) * sample) / len(y) + 1e-3 * w)
        bias -= 0.5 * float(np.mean((p - y) * sample))
    w = w / spread
    scale = max(
        abs(w[FEATURES.index("semantic")]) + abs(w[FEATURES.index("semantic_plugin")]), 1e-9
    )
    weights = {f: round(float(v / scale), 3) for f, v in zip(FEATURES, w, strict=True)}
    learned = replace(start, name="learned", weights=weights)
    recalls = [_recall5(_fused(s, learned), s.gold) for s in sets]
    print(f"  learned {weights}: {float(np.mean(recalls)):.4f} {[round(r, 3) for r in recalls]}")
    return learned


def _measures(
    s: Set, fusion: Fusion, scores: list[Any], rule: FitRule
) -> list[list[tuple[float, float, bool, float]]]:
    index = s.search.index
    out = []
    for x, fused in zip(scores, _fused(s, fusion, scores), strict=True):
        top = np.argsort(-np.where(index.alive, fused, -np.inf))[: rule.depth]
        out.append(
            [
                (
                    cosine(index, x, int(r)),
                    word_evidence(index, x, int(r), rule),
                    covers(index, x, int(r)),
                )
                for r in top
            ]
        )
    return out


def calibrate(sets: list[Set], fusion: Fusion) -> None:
    """The fit floors: on-topic left empty (twice as bad) against off-topic given candidates."""
    on = [m for s in sets for m in _measures(s, fusion, s.scores, FIT)]
    off = [m for s in sets for m in _measures(s, fusion, s.off, FIT)]
    print(f"on-topic queries {len(on)}, off-topic (tuning half, all catalogs) {len(off)}")
    results = []
    for cos_floor, ev_floor in itertools.product(
        np.arange(0.35, 0.71, 0.025), np.arange(0.6, 2.01, 0.1)
    ):

        def fits(
            m: list[tuple[float, float, bool]], c1: float = cos_floor, e1: float = ev_floor
        ) -> bool:
            return any(c >= c1 or e >= e1 for c, e, _ in m)

        on_empty = sum(1 for m in on if not fits(m)) / len(on)
        off_empty = sum(1 for m in off if not fits(m)) / len(off)
        results.append((2 * on_empty + (1 - off_empty), cos_floor, ev_floor, on_empty, off_empty))
    results.sort()
    for cost, c, e, a, b in results[:8]:
        print(f"  cost {cost:.3f} cosine>={c:.3f} evidence>={e:.1f}: on-topic empty {a:.3f}, "
              f"off-topic empty {b:.3f}")  # fmt: skip
    for s in sets:
        m = _measures(s, fusion, s.scores, FIT)
        o = _measures(s, fusion, s.off, FIT)
        fits = lambda q: query_fits(q, FIT)  # noqa: E731
        print(f"  current floors on {s.name}: on-topic empty "
              f"{sum(1 for q in m if not fits(q)) / len(m):.3f}, off-topic empty "
              f"{sum(1 for q in o if not fits(q)) / len(o):.3f}")  # fmt: skip


def main() -> None:
    """Run the grids and print what to ship."""
    sets = _sets()
    print("fusion grid (mean recall@5 over the tuning sets):")
    fusion = grid(sets)
    print(f"best z-fusion: {dict(fusion.weights)} lexical_weight={fusion.lexical_weight}")
    learned = learn(sets, fusion)
    for name, f in (("shipped z-fusion", Z_FUSION), ("grid", fusion), ("learned", learned)):
        print(f"  {name}: {[round(_recall5(_fused(s, f), s.gold), 4) for s in sets]}")
    calibrate(sets, fusion)
