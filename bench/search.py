"""How well capability search finds the right plugin, and how fast.

Catalogs (``bench/search_data.py``): Seal-Tools per tool (4,076 plugins) and by field
(2,276), and BFCL-live (739 plugins, natural requests by real users). For each it prints,
per ranker, recall@1, recall@5, nDCG@10, the share of on-topic requests left with no
candidate and the share of held-out off-topic requests left with none:

- ``plain bm25``: the baseline, one BM25 (bm25s, its default k1 = 1.5, b = 0.75) over plugin
  documents, every field once, no stemming, the whole request at once;
- ``lexical``, ``semantic``, ``fused`` (the engine's rankings; ``fused`` is what search uses,
  ``z-fusion`` and ``learned`` the two fusions it can choose between);
- ``+fit``: what ``search_capabilities`` returns (at most 6 candidates, none when nothing is
  plausibly related).

Then the short task descriptions (``bench/data/bfcl_short_tasks.jsonl``, written before any
tuning; the tuning ones, ``bfcl_short_tasks_tune.jsonl``, on the line below), the Seal-Tools requests for several tools (every gold tool in the first 6), the
index build time, the latency of one 4-query search over 4,000 plugins, and the time to add
one plugin to that index.

Tuning data: ``bfcl-live/tune.jsonl``, Seal-Tools ``test_out_domain`` and the even half of the
off-topic requests (``--tune``). Reported: ``bfcl-live/test.jsonl``, ``test_in_domain`` and the
odd half.

    .venv/bin/python bench/search.py                        # the tables
    .venv/bin/python bench/search.py --engine-root /tmp/old # the same tables for another tree
    .venv/bin/python bench/search.py --tune                 # the fusion and fit grids
    .venv/bin/python bench/search.py --latency [--engine-root /tmp/old]  # speed alone
    .venv/bin/python bench/search.py --latency --before /tmp/old  # speed before, then now
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _import_path(argv: Sequence[str]) -> None:
    """Put the engine's tree first on the path (``--engine-root`` measures another one)."""
    root = str(ROOT)
    if "--engine-root" in argv:
        root = argv[list(argv).index("--engine-root") + 1]
    for path in (str(HERE), root):
        if path not in sys.path:
            sys.path.insert(0, path)


_import_path(sys.argv)

import search_data as data  # noqa: E402
from common import table  # noqa: E402

from oracle_core.plugins.registry import Registry  # noqa: E402

_WORD = re.compile(r"[a-z0-9]+")


def _embedder() -> Any:
    try:
        from oracle_core.capabilities.search import WordLlamaEmbedder  # type: ignore[attr-defined]
    except ImportError:
        from oracle_core.capabilities.embeddings import (  # type: ignore[import-not-found,no-redef]
            WordLlamaEmbedder,
        )
    return WordLlamaEmbedder()


def _search_class() -> Any:
    from oracle_core.capabilities.search import CapabilitySearch

    return CapabilitySearch


class PlainBM25:
    """The untuned baseline: bm25s over plugin documents, every field once, no stemming."""

    def __init__(self, registry: Registry) -> None:
        import bm25s  # type: ignore[import-untyped]

        self.names = [p.name for p in registry.listed()]
        docs = [self._terms(self._text(p)) for p in registry.listed()]
        self.index = bm25s.BM25(k1=1.5, b=0.75)
        self.index.index([d or ["\x00"] for d in docs], show_progress=False)

    @staticmethod
    def _text(plugin: Any) -> str:
        m = plugin.manifest
        parts = [m.name, m.title, m.summary, *m.when_to_use, *(e.user for e in m.examples)]
        parts += [*m.tags, m.category or ""]
        for tool in plugin.tools:
            parts += [tool.name, tool.description]
            for name, spec in (tool.parameters.get("properties") or {}).items():
                parts += [name, str(spec.get("description", ""))]
        return " ".join(parts)

    @staticmethod
    def _terms(text: str) -> list[str]:
        split = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text).replace("_", " ").lower()
        return [w for w in _WORD.findall(split) if not w.isdigit()]

    def rank(self, queries: Sequence[str], depth: int = 10) -> list[list[str]]:
        """Each query's plugin names, best first."""
        import numpy as np

        vocab = self.index.vocab_dict
        out = []
        for query in queries:
            ids = [vocab[t] for t in self._terms(query) if t in vocab]
            if not ids:
                out.append([])
                continue
            scores = np.asarray(self.index.get_scores(ids))
            top = [int(i) for i in np.argsort(-scores)[:depth] if scores[i] > 0]
            out.append([self.names[i] for i in top])
        return out


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _table(rows: list[list[str]], headers: list[str]) -> str:
    return table([headers, *rows], numbers_right=False, rule=False)


def _names(found: Sequence[Sequence[Any]]) -> list[list[str]]:
    return [[c.plugin.name for c in f] for f in found]


def _modes(search: Any) -> list[str]:
    """The engine's rankings worth a row (the new engine has two fusions to compare)."""
    extra = list(getattr(search, "FUSIONS", ()))
    return ["lexical", "semantic", "fused", *extra]


def quality_rows(
    catalog: str, search: Any, rows: list[tuple[str, set[str]]], held_out: list[str]
) -> list[list[str]]:
    """The table rows of one catalog and query set."""
    queries, truth = [q for q, _ in rows], [r for _, r in rows]
    off = sum(1 for f in search.search(held_out) if not f) / len(held_out)
    measured = [("plain bm25", data.quality(PlainBM25(search.registry).rank(queries), truth))]
    for mode in _modes(search):
        measured.append((mode, data.quality(search.rank(queries, mode, depth=10), truth)))
    measured.append(("fused+fit", data.quality(_names(search.search(queries)), truth)))
    out = []
    for ranker, q in measured:
        fit = ranker.endswith("+fit")
        out.append([
            catalog, ranker, str(len(rows)), f"{q.recall_at_1:.3f}", f"{q.recall_at_5:.3f}",
            f"{q.ndcg_at_10:.3f}", f"{q.empty:.3f}" if fit else "-", f"{off:.3f}" if fit else "-",
        ])  # fmt: skip
    return out


def latency(search: Any, queries: Sequence[str], calls: int = 200) -> tuple[float, float]:
    """p50 and p99 in milliseconds of one search of 4 queries, over ``calls`` calls."""
    samples = []
    for i in range(calls):
        batch = [queries[(4 * i + j) % len(queries)] for j in range(4)]
        samples.append(_timed(lambda b=batch: search.search(b)) * 1000)  # type: ignore[misc]
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def add_one_ms(search: Any, registry: Registry) -> str:
    """Milliseconds to add one plugin to the built index (``-`` when the engine cannot)."""
    if not hasattr(search, "update"):
        return "-"
    import search_data

    from oracle_core.authoring.manifest import PluginManifest
    from oracle_core.plugins.discovery import PluginSource
    from oracle_core.plugins.registry import Plugin

    spec = {"api_name": "brand_new_tool", "api_description": "Count the birds in a photo."}
    plugin = Plugin(
        PluginManifest(name="brand-new", summary="Bird counting.", when_to_use=["count birds"]),
        PluginSource(name="brand-new"),
        [search_data.make_tool(spec)],
    )
    plugins = {**registry.plugins, "brand-new": plugin}
    return f"{_timed(lambda: search.update(Registry(plugins=plugins))) * 1000:.1f}"


SPEED_HEADERS = [
    "catalog", "plugins", "build lexical s", "build fused s",
    "4 Seal requests lexical p50/p99 ms", "fused p50/p99 ms",
    "4 short tasks fused p50/p99 ms", "add one plugin ms",
]  # fmt: skip


def speed_row(cls: Any, embedder: Any, grouped: bool) -> list[str]:
    """The speed table's row of one Seal-Tools catalog."""
    catalog = "seal by-field" if grouped else "seal per-tool"
    registry, _ = data.seal_catalog(grouped)
    lexical = cls(registry)
    lexical_build = _timed(lambda s=lexical: s.index)  # type: ignore[misc]
    search = cls(registry, embedder=embedder)
    build = _timed(lambda s=search: s.index)  # type: ignore[misc]
    seal_in = data.load_jsonl(data.SEAL / "test_in_domain.jsonl")
    texts = [r["query"] for r in seal_in]  # 1 to 6 sentences each
    short_texts = [r["task"] for r in data.load_jsonl(data.SHORT_TASKS)]
    p50, p99 = latency(search, texts)
    lp50, lp99 = latency(lexical, texts)
    sp50, sp99 = latency(search, short_texts)
    return [
        catalog, str(len(registry)), f"{lexical_build:.2f}", f"{build:.2f}",
        f"{lp50:.2f} / {lp99:.2f}", f"{p50:.2f} / {p99:.2f}", f"{sp50:.2f} / {sp99:.2f}",
        add_one_ms(search, registry),
    ]  # fmt: skip


def speed() -> None:
    """Print the speed table alone (``--latency``)."""
    cls = _search_class()
    embedder = _embedder()
    rows = [speed_row(cls, embedder, grouped) for grouped in (False, True)]
    print(f"engine: {Path(sys.modules[cls.__module__].__file__ or '').parents[3]}")
    print(_table(rows, SPEED_HEADERS))


def report() -> None:
    """Print every table."""
    cls = _search_class()
    embedder = _embedder()
    _, held_out = data.off_topic()
    rows: list[list[str]] = []
    speed: list[list[str]] = []
    seal_in = data.load_jsonl(data.SEAL / "test_in_domain.jsonl")
    multi: list[list[str]] = []
    for grouped in (False, True):
        catalog = "seal by-field" if grouped else "seal per-tool"
        registry, owner = data.seal_catalog(grouped)
        search = cls(registry, embedder=embedder)
        labelled = data.labelled(seal_in, owner)
        rows += quality_rows(f"{catalog} in-domain", search, labelled, held_out)
        several = [(q, r) for q, r in labelled if len(r) > 1]
        truth = [r for _, r in several]
        ranked = search.rank([q for q, _ in several], "fused", depth=6)
        found = _names(search.search([q for q, _ in several]))
        multi.append([
            catalog, str(len(several)), f"{data.all_within(ranked, truth, 6):.3f}",
            f"{data.all_within(found, truth, 6):.3f}",
        ])  # fmt: skip
        speed.append(speed_row(cls, embedder, grouped))
    registry, owner = data.bfcl_catalog()
    search = cls(registry, embedder=embedder)
    test = data.labelled(data.load_jsonl(data.BFCL / "test.jsonl"), owner)
    rows += quality_rows("bfcl-live test", search, test, held_out)
    shorts = []
    for name, path in (
        ("bfcl short tasks", data.SHORT_TASKS),
        ("(tuning) short tasks", data.SHORT_TASKS_TUNE),
    ):
        tasks = data.short_tasks(owner, path)
        found = _names(search.search([t for t, _ in tasks]))
        truth = [g for _, g in tasks]
        shorts.append([
            name, str(len(tasks)), f"{data.any_hit(found, truth):.3f}",
            f"{sum(1 for f in found if not f) / len(found):.3f}",
        ])  # fmt: skip
    print(f"semantic ranker: {embedder.name}\n")
    print(_table(rows, [
        "catalog", "ranker", "n", "recall@1", "recall@5", "nDCG@10", "on-topic empty",
        "off-topic held-out empty",
    ]))  # fmt: skip
    print()
    print(_table(shorts, ["set", "n", "tool among candidates", "empty"]))
    print()
    print(_table(multi, ["multi-tool (in-domain)", "n", "all in first 6 (ranking)", "(returned)"]))
    print()
    print(_table(speed, SPEED_HEADERS))


def main() -> None:
    """Run the report, or the tuning grids."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engine-root", help="measure the oracle_core of another tree")
    parser.add_argument("--tune", action="store_true", help="the fusion and fit grids")
    parser.add_argument("--fit", action="store_true", help="with --tune: the fit floors only")
    parser.add_argument("--latency", action="store_true", help="the speed table alone")
    parser.add_argument(
        "--before", metavar="ROOT", help="with --latency: first the speed table of another tree"
    )
    args = parser.parse_args()
    if args.latency:
        if args.before:  # its own process: one oracle_core a process
            import subprocess

            command = [sys.executable, __file__, "--latency", "--engine-root", args.before]
            subprocess.run(command, check=True)
            print()
        speed()
    elif args.tune:
        import search_tune

        search_tune.main()
    else:
        report()


if __name__ == "__main__":
    main()
