"""Tuning of capability search on the tuning sets only (``bench/search.py --tune``).

Tuning sets: ``bfcl-live/tune.jsonl``, Seal-Tools ``test_out_domain`` (both catalogs) and the
even half of the off-topic requests. Each query's raw scores are computed once; the grids
then re-fuse them:

1. the fusion: lexical weight, best-tool weight, sentence weight, max-sim or sentence cosine;
2. a learned ranker: logistic regression over the same features, on the first 30 candidates
   of every tuning query (labels: the gold plugins);
3. the fit rule's floors (``--tune --fit``): on BFCL-live tune and the even off-topic half
   over the BFCL catalog, among the floors that leave at most 5% of the tuning requests
   without a candidate, those that give the fewest off-topic requests candidates;
4. the short-query floor (``--tune --fit``): on the tuning short task descriptions
   (``bench/data/bfcl_short_tasks_tune.jsonl``) with the same requests.
"""

from __future__ import annotations

import itertools
import sys
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
    knows_a_word,
    paired_cosine,
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


def _measures(s: Set, fusion: Fusion, scores: list[Any], rule: FitRule) -> list[dict[str, Any]]:
    """Each query's fit measures over its first candidates (what :func:`query_fits` reads)."""
    index = s.search.index
    out = []
    for x, fused in zip(scores, _fused(s, fusion, scores), strict=True):
        top = [int(r) for r in np.argsort(-np.where(index.alive, fused, -np.inf))[: rule.depth]]
        out.append(
            {
                "rows": [
                    (cosine(index, x, r), word_evidence(index, x, r, rule), covers(index, x, r),
                     paired_cosine(index, x, r))
                    for r in top
                ],
                "semantic": x.semantic is not None,
                "wordless": not knows_a_word(index, x),
                "terms": len(x.terms),
            }
        )  # fmt: skip
    return out


def _fits(m: dict[str, Any], rule: FitRule) -> bool:
    is_short = 0 < m["terms"] <= rule.short_terms
    return query_fits(m["rows"], rule, m["semantic"], m["wordless"], is_short)


def _empty(measured: list[dict[str, Any]], rule: FitRule) -> float:
    return sum(1 for m in measured if not _fits(m, rule)) / max(len(measured), 1)


def calibrate_short(bfcl: Set, fusion: Fusion) -> None:
    """The short-query floor, on the tuning short task descriptions
    (``bench/data/bfcl_short_tasks_tune.jsonl``), BFCL-live tune and the even off-topic half:
    among the floors that give no more off-topic requests candidates than the rule without
    one, those that leave the fewest tuning requests and short tasks empty."""
    tasks = [r["task"] for r in data.load_jsonl(data.SHORT_TASKS_TUNE)]
    short_m = _measures(bfcl, fusion, bfcl.search.scores(tasks), FIT)
    on, off = _measures(bfcl, fusion, bfcl.scores, FIT), _measures(bfcl, fusion, bfcl.off, FIT)
    none = replace(FIT, short_terms=0)
    base_off = 1 - _empty(off, none)
    print(f"  without a short floor: short tasks empty {_empty(short_m, none):.3f}, tuning "
          f"empty {_empty(on, none):.3f}, off-topic given candidates {base_off:.3f}")  # fmt: skip
    for terms, floor in itertools.product((2, 3, 4, 5, 6), (0.25, 0.3, 0.32, 0.35, 0.4, 0.45)):
        rule = replace(FIT, short_terms=terms, short_cosine=floor)
        given = 1 - _empty(off, rule)
        mark = "" if given <= base_off else "  (more off-topic candidates)"
        print(f"  at most {terms} terms, cosine>={floor}: short tasks empty "
              f"{_empty(short_m, rule):.3f}, tuning empty {_empty(on, rule):.3f}, off-topic "
              f"given candidates {given:.3f}{mark}")  # fmt: skip


def calibrate(sets: list[Set], fusion: Fusion) -> None:
    """The fit floors, on BFCL-live tune and the even off-topic half over the BFCL catalog
    (natural requests: the catalog the off-topic target is about): the loosest floors that
    keep 80% of the tuning off-topic half empty, on-topic requests left empty counting
    most. The Seal-Tools catalogs are printed alongside."""
    bfcl = sets[0]
    on, off = _measures(bfcl, fusion, bfcl.scores, FIT), _measures(bfcl, fusion, bfcl.off, FIT)
    results = []
    for c1, e1, c2, e2 in itertools.product(
        (0.6, 0.65, 0.7, 0.75, 0.8),
        (1.0, 1.1, 1.2, 1.3, 1.5),
        (0.2, 0.3, 0.4, 0.5),
        (0.9, 1.0, 1.1),
    ):
        rule = replace(FIT, cosine_floor=c1, evidence_floor=e1, paired_cosine=c2,
                       paired_evidence=e2)  # fmt: skip
        results.append((_empty(on, rule), 1 - _empty(off, rule), c1, e1, c2, e2))
    # The rule: meet the on-topic target (at most 5% left empty) on the tuning requests, and
    # among the floors that do, give the fewest off-topic requests candidates (then the
    # fewest on-topic empties). An on-topic request left empty is the worse failure.
    ok = sorted((b, a, *rest) for a, b, *rest in results if a <= 0.05)
    ok = [(a, b, *rest) for b, a, *rest in ok]
    for a, b, c1, e1, c2, e2 in ok[:8]:
        print(f"  on-topic empty {a:.3f}, off-topic given candidates {b:.3f}: cosine>={c1} "
              f"evidence>={e1} paired cosine>={c2} & evidence>={e2}")  # fmt: skip
    for s in sets:
        m, o = _measures(s, fusion, s.scores, FIT), _measures(s, fusion, s.off, FIT)
        print(f"  shipped floors on {s.name}: on-topic empty {_empty(m, FIT):.3f}, "
              f"off-topic empty {_empty(o, FIT):.3f}")  # fmt: skip


def main() -> None:
    """Run the grids and print what to ship."""
    sets = _sets()
    if "--fit" in sys.argv:  # the fit floors alone, for the shipped fusion
        calibrate(sets, Z_FUSION)
        print("short-query floor:")
        calibrate_short(sets[0], Z_FUSION)
        return
    print("fusion grid (mean recall@5 over the tuning sets):")
    fusion = grid(sets)
    print(f"best z-fusion: {dict(fusion.weights)} lexical_weight={fusion.lexical_weight}")
    learned = learn(sets, fusion)
    for name, f in (("shipped z-fusion", Z_FUSION), ("grid", fusion), ("learned", learned)):
        print(f"  {name}: {[round(_recall5(_fused(s, f), s.gold), 4) for s in sets]}")
    calibrate(sets, fusion)
