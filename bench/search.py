"""How well capability search finds the right plugin, and how fast: Seal-Tools, 4,076 tools.

Two catalogs are built in code (no entry points) from ``shared/data/seal-tools/tool.jsonl``:

- ``per-tool``: one plugin per tool (4,076 plugins), category = the field's first part;
- ``by-field``: one plugin per ``field`` (2,276 plugins, 1 to 12 tools each).

For each ranker it prints recall@1, recall@5 and nDCG@10 over the labelled queries, where a
query's relevant plugins are those holding the tools it calls:

- ``plain bm25``: the baseline, one BM25 over plugin documents with every field once, no
  stemming and bm25s's default parameters, the whole query at once (the same index code,
  :data:`~oracle_core.capabilities.index.PLAIN_PLUGIN_WEIGHTS`, ``Analyzer(stem=False)``);
- ``lexical``: the tuned, stemmed plugin and tool BM25 rankings, fused, with each sentence
  of a longer request also ranked against the tool documents on its own;
- ``semantic`` (wordllama, when installed) and ``fused`` (all of them);
- ``fused+fit``: what ``search_capabilities`` returns, the fused ranking after the fit
  threshold (at most 6 candidates, none when nothing fits).

Then the index build time, the p50/p99 latency of one ``search_capabilities`` call of 4
queries, and how many off-topic requests get no candidate.

Weights, BM25's ``k1``, the fusion weights and constants, and the fit thresholds are tuned
on ``test_out_domain`` only (``--tune``, ``--calibrate``, and grids over the constants of
:mod:`oracle_core.capabilities.search`); the figures that count are those of
``test_in_domain``, which tuning never sees.

    .venv/bin/python bench/search.py              # the tables
    .venv/bin/python bench/search.py --tune       # coordinate ascent of the field weights
    .venv/bin/python bench/search.py --calibrate  # the fit thresholds
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for folder in (ROOT, ROOT / "bench"):  # tests import this file by path, from elsewhere
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from common import table  # noqa: E402

from oracle_core.authoring.manifest import PluginManifest  # noqa: E402
from oracle_core.authoring.tools.tool import Tool  # noqa: E402
from oracle_core.capabilities import index as index_module  # noqa: E402
from oracle_core.capabilities import search as search_module  # noqa: E402
from oracle_core.capabilities.embeddings import Embedder  # noqa: E402
from oracle_core.capabilities.index import Analyzer  # noqa: E402
from oracle_core.capabilities.search import CapabilitySearch, Mode  # noqa: E402
from oracle_core.plugins.discovery import PluginSource  # noqa: E402
from oracle_core.plugins.registry import Plugin, Registry  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "seal-tools"
TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
OFF_TOPIC = [
    "hello, how are you today?",
    "thanks, that is all",
    "tell me a joke",
    "what is your name",
    "ok",
    "asdf qwerty zxcv",
    "write a haiku about love",
    "yes please go ahead",
    "hello there",
    "good morning",
    "can you help me",
    "what time is it",
    "how is it going",
    "I am bored",
    "translate this poem into klingon",
    "who won the world cup in 1998",
    "what is the meaning of life",
    "tell me a story about dragons",
]
"""Requests no capability fits (written here, not taken from the data).

Only :data:`OFF_TOPIC_TUNING` (every other one) was looked at when choosing the fit rule and
thresholds (``--calibrate``); the report prints the held-out half apart.
"""

OFF_TOPIC_TUNING = OFF_TOPIC[0::2]
OFF_TOPIC_HELD_OUT = OFF_TOPIC[1::2]


def _never(**_: Any) -> Any:
    raise RuntimeError("benchmark tools are never called")


def _slug(text: str) -> str:
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-") or "x"


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every JSON object of a JSON-lines file."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _tool(spec: dict[str, Any]) -> Tool:
    properties = {
        name: {
            "type": TYPES.get(str(p.get("type")), "string"),
            "description": p.get("description", ""),
        }
        for name, p in (spec.get("parameters") or {}).items()
    }
    return Tool(
        name=spec["api_name"],
        description=spec["api_description"],
        parameters={
            "type": "object",
            "properties": properties,
            "required": spec.get("required") or [],
        },
        function=_never,
    )


def _plugin(name: str, field: str, summary: str, tools: list[Tool]) -> Plugin:
    top, _, sub = field.partition("/")
    manifest = PluginManifest(
        name=name,
        title=sub or top,
        summary=summary,
        when_to_use=[f"tasks in {sub or top}"],
        tags=[_slug(sub)] if sub else [],
        category=_slug(top),
    )
    return Plugin(manifest=manifest, source=PluginSource(name=name), tools=tools)


def seal_catalog(tools: Sequence[dict[str, Any]], grouped: bool) -> tuple[Registry, dict[str, str]]:
    """A registry of Seal-Tools plugins and the plugin that holds each tool (by API name)."""
    plugins: dict[str, Plugin] = {}
    owner: dict[str, str] = {}
    if not grouped:
        for spec in tools:
            name = _slug(spec["api_name"])
            while name in plugins:
                name += "-x"
            plugins[name] = _plugin(name, spec["field"], spec["api_description"], [_tool(spec)])
            owner[spec["api_name"]] = name
        return Registry(plugins=plugins), owner
    fields: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for spec in tools:
        fields[spec["field"]].append(spec)
    for field, specs in fields.items():
        name = _slug(field)
        while name in plugins:
            name += "-x"
        summary = f"Tools for {field.replace('/', ': ')}."
        plugins[name] = _plugin(name, field, summary, [_tool(s) for s in specs])
        owner.update({s["api_name"]: name for s in specs})
    return Registry(plugins=plugins), owner


def labelled(
    queries: Sequence[dict[str, Any]], owner: dict[str, str]
) -> list[tuple[str, set[str]]]:
    """``(query, relevant plugin names)`` for every query whose tools are all in the catalog."""
    out = []
    for row in queries:
        wanted = {owner.get(c["api"]) for c in row["calling"]}
        if wanted and None not in wanted:
            out.append((row["query"], {w for w in wanted if w}))
    return out


@dataclass
class Quality:
    """Retrieval quality of one ranker on one query set."""

    recall_at_1: float
    recall_at_5: float
    ndcg_at_10: float


def quality(ranked: Sequence[Sequence[str]], truth: Sequence[set[str]]) -> Quality:
    """recall@1 and @5 (share of the relevant plugins found, averaged) and binary nDCG@10."""
    r1 = r5 = ndcg = 0.0
    for names, relevant in zip(ranked, truth, strict=True):
        r1 += len(relevant & set(names[:1])) / min(len(relevant), 1)
        r5 += len(relevant & set(names[:5])) / min(len(relevant), 5)
        dcg = sum(1 / math.log2(i + 2) for i, n in enumerate(names[:10]) if n in relevant)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
        ndcg += dcg / ideal
    n = max(len(truth), 1)
    return Quality(r1 / n, r5 / n, ndcg / n)


def evaluate(search: CapabilitySearch, rows: Sequence[tuple[str, set[str]]], mode: Mode) -> Quality:
    """The quality of ``search``'s ``mode`` ranking on ``rows``."""
    ranked = search.rank([q for q, _ in rows], mode, depth=10)
    return quality(ranked, [r for _, r in rows])


def evaluate_fit(search: CapabilitySearch, rows: Sequence[tuple[str, set[str]]]) -> Quality:
    """The quality of what ``search`` returns (fused, after the fit threshold) on ``rows``."""
    found = search.search([q for q, _ in rows])
    return quality([[c.plugin.name for c in f] for f in found], [r for _, r in rows])


PLAIN_K1, PLAIN_B = 1.5, 0.75
"""BM25's parameters in the plain baseline: bm25s's defaults."""


def plain_search(registry: Registry) -> CapabilitySearch:
    """The untuned baseline: every field once, no stemming, bm25s's default parameters.

    Rank it with mode ``bm25``: the whole query against plugin documents, one ranking.
    """
    return CapabilitySearch(
        registry,
        plugin_weights=index_module.PLAIN_PLUGIN_WEIGHTS,
        tool_weights=index_module.PLAIN_TOOL_WEIGHTS,
        analyzer=Analyzer(stem=False),
        k1=PLAIN_K1,
        b=PLAIN_B,
    )


def _embedder() -> Embedder | None:
    try:
        from oracle_core.capabilities.embeddings import WordLlamaEmbedder

        return WordLlamaEmbedder()
    except ImportError:
        return None


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def latency(
    search: CapabilitySearch, queries: Sequence[str], calls: int = 200
) -> tuple[float, float]:
    """p50 and p99 in milliseconds of one search of 4 queries, over ``calls`` calls."""
    samples = []
    for i in range(calls):
        batch = [queries[(4 * i + j) % len(queries)] for j in range(4)]
        samples.append(_timed(lambda b=batch: search.search(b)) * 1000)  # type: ignore[misc]
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def report() -> None:
    """Print the quality, build time and latency tables for both catalogs."""
    tools = load_jsonl(DATA / "tool.jsonl")
    splits = {s: load_jsonl(DATA / f"{s}.jsonl") for s in ("test_in_domain", "test_out_domain")}
    embedder = _embedder()
    quality_rows: list[list[str]] = []
    speed_rows: list[list[str]] = []
    for grouped in (False, True):
        catalog = "by-field" if grouped else "per-tool"
        registry, owner = seal_catalog(tools, grouped)
        lexical_build = _timed(lambda r=registry: CapabilitySearch(r).index)  # type: ignore[misc]
        search = CapabilitySearch(registry, embedder=embedder)
        build = _timed(lambda s=search: s.index)  # type: ignore[misc]
        plain = plain_search(registry)
        modes: list[Mode] = ["lexical", "semantic", "fused"] if embedder else ["lexical"]
        for split, queries in splits.items():
            rows = labelled(queries, owner)
            tag = "test" if split == "test_in_domain" else "tuning"
            measured = [("plain bm25", evaluate(plain, rows, "bm25"))]
            measured += [(mode, evaluate(search, rows, mode)) for mode in modes]
            measured.append(
                ("fused+fit" if embedder else "lexical+fit", evaluate_fit(search, rows))
            )
            for ranker, q in measured:
                quality_rows.append([
                    catalog, f"{split} ({tag})", ranker, str(len(rows)),
                    f"{q.recall_at_1:.3f}", f"{q.recall_at_5:.3f}", f"{q.ndcg_at_10:.3f}",
                ])  # fmt: skip
        texts = [r["query"] for r in splits["test_in_domain"]]
        p50, p99 = latency(search, texts)
        lexical = CapabilitySearch(registry)
        lp50, lp99 = latency(lexical, texts)
        tuned_off = sum(1 for found in search.search(OFF_TOPIC_TUNING) if not found)
        held_off = sum(1 for found in search.search(OFF_TOPIC_HELD_OUT) if not found)
        speed_rows.append([
            catalog, str(len(registry)), f"{lexical_build:.2f}", f"{build:.2f}",
            f"{lp50:.2f} / {lp99:.2f}", f"{p50:.2f} / {p99:.2f}",
            f"{tuned_off}/{len(OFF_TOPIC_TUNING)}", f"{held_off}/{len(OFF_TOPIC_HELD_OUT)}",
        ])  # fmt: skip
    print(f"semantic ranker: {embedder.name if embedder else 'none (wordllama not installed)'}\n")
    print(
        table(
            [
                ["catalog", "queries", "ranker", "n", "recall@1", "recall@5", "nDCG@10"],
                *quality_rows,
            ],
            numbers_right=False,
            rule=False,
        )
    )
    print()
    print(table([[
        "catalog", "plugins", "build lexical s", "build fused s",
        "4 queries lexical p50/p99 ms", "fused p50/p99 ms",
        "off-topic empty (tuning)", "(held out)",
    ], *speed_rows], numbers_right=False, rule=False))  # fmt: skip


def tune() -> None:
    """Coordinate ascent of the field weights on ``test_out_domain`` (both catalogs)."""
    tools = load_jsonl(DATA / "tool.jsonl")
    dev = load_jsonl(DATA / "test_out_domain.jsonl")
    catalogs = [seal_catalog(tools, grouped) for grouped in (False, True)]
    sets = [(registry, labelled(dev, owner)) for registry, owner in catalogs]
    plugin_weights = dict(index_module.PLUGIN_WEIGHTS)
    tool_weights = dict(index_module.TOOL_WEIGHTS)

    def objective() -> float:
        total = 0.0
        for registry, rows in sets:
            search = CapabilitySearch(
                registry, plugin_weights=plugin_weights, tool_weights=tool_weights
            )
            q = evaluate(search, rows, "lexical")
            total += q.recall_at_5 + q.ndcg_at_10
        return total / 2

    best = objective()
    print(f"start {best:.4f} {plugin_weights} {tool_weights}")
    for _ in range(2):
        for weights in (plugin_weights, tool_weights):
            for field in list(weights):
                for value in (1, 2, 3, 4, 6):  # every field a model reads counts
                    if value == weights[field]:
                        continue
                    old = weights[field]
                    weights[field] = value
                    score = objective()
                    if score > best + 1e-4:
                        best = score
                        print(f"{field}={value}: {best:.4f}")
                    else:
                        weights[field] = old
    print(f"best {best:.4f}\nPLUGIN_WEIGHTS = {plugin_weights}\nTOOL_WEIGHTS = {tool_weights}")


def calibrate() -> None:
    """The fit measures of the right plugin on ``test_out_domain``, and of off-topic requests."""
    tools = load_jsonl(DATA / "tool.jsonl")
    dev = load_jsonl(DATA / "test_out_domain.jsonl")
    for grouped in (False, True):
        registry, owner = seal_catalog(tools, grouped)
        search = CapabilitySearch(registry, embedder=_embedder())
        rows = labelled(dev, owner)
        rows_of = {name: row for row, name in enumerate(search.index.plugins)}
        print("by-field" if grouped else "per-tool")
        for label, queries, truth in (
            ("right plugin", [q for q, _ in rows], [r for _, r in rows]),
            ("off-topic best", OFF_TOPIC_TUNING, [set() for _ in OFF_TOPIC_TUNING]),
        ):
            measures: dict[str, list[float]] = defaultdict(list)
            for query, embedded, relevant in zip(
                queries, search._embedded(queries), truth, strict=True
            ):
                scores = search._scores(query, embedded)
                fused = search._fuse(scores, "fused")
                best = [max(fused, key=lambda r: fused[r])] if fused else []
                for row in [rows_of[n] for n in relevant] or best:
                    total = scores.total or 1.0
                    covered = search.covered(scores, row)
                    weighted = search.covered(scores, row, search_module.WEAK_FIELD_SHARE)
                    measures["evidence"].append(covered / scores.rarest)
                    measures["coverage"].append(weighted / total)
                    measures["cov. evid."].append(weighted / scores.rarest)
                    if scores.semantic_plugin is not None and scores.semantic_tool is not None:
                        measures["similarity"].append(
                            max(
                                float(scores.semantic_plugin[row]), float(scores.semantic_tool[row])
                            )
                        )
            for name, values in measures.items():
                qs = statistics.quantiles(values, n=20)
                print(
                    f"  {label:15} {name:10} n={len(values):4} p5={qs[0]:.2f} p50={qs[9]:.2f} max={max(values):.2f}"
                )
    print(
        f"MIN_EVIDENCE={search_module.MIN_EVIDENCE} MIN_COVERAGE={search_module.MIN_COVERAGE} "
        f"MIN_TERM_EVIDENCE={search_module.MIN_TERM_EVIDENCE} MIN_SIMILARITY={search_module.MIN_SIMILARITY} "
        f"WEAK_FIELD_SHARE={search_module.WEAK_FIELD_SHARE}"
    )


def main() -> None:
    """Run the report, or tune or calibrate."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tune", action="store_true", help="tune the field weights on test_out_domain"
    )
    parser.add_argument("--calibrate", action="store_true", help="show the fit threshold data")
    args = parser.parse_args()
    if args.tune:
        tune()
    elif args.calibrate:
        calibrate()
    else:
        report()


if __name__ == "__main__":
    main()
