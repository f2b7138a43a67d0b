"""The data of the capability-search benchmark: catalogs, labelled requests and measures.

Catalogs are built in code (no entry points) from the shared data (``../shared/data``):

- Seal-Tools ``per-tool`` (one plugin per tool, 4,076) and ``by-field`` (one plugin per
  ``field``, 2,276 plugins of 1 to 12 tools);
- BFCL-live (one plugin per tool, 739): natural requests written by real users.

Only :mod:`oracle_core` public classes are used (``PluginManifest``, ``Plugin``, ``Registry``,
``Tool``), so the same code measures any version of the search engine.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle_core.authoring.manifest import PluginManifest
from oracle_core.authoring.tools.tool import Tool
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.registry import Plugin, Registry

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SEAL = SHARED / "seal-tools"
BFCL = SHARED / "bfcl-live"
OFFTOPIC = SHARED / "offtopic" / "requests.json"
SHORT_TASKS = Path(__file__).resolve().parent / "data" / "bfcl_short_tasks.jsonl"
SHORT_TASKS_TUNE = SHORT_TASKS.with_name("bfcl_short_tasks_tune.jsonl")
TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every JSON object of a JSON-lines file."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def off_topic() -> tuple[list[str], list[str]]:
    """The off-topic requests split in halves: (tuning = even indices, held out = odd)."""
    requests = json.loads(OFFTOPIC.read_text(encoding="utf-8"))
    return requests[0::2], requests[1::2]


def _never(**_: Any) -> Any:
    raise RuntimeError("benchmark tools are never called")


def slug(text: str) -> str:
    """A plugin name made of ``text``: lowercase words joined by dashes."""
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-") or "x"


def make_tool(spec: dict[str, Any]) -> Tool:
    """A never-called tool of one data row (name, description, parameters)."""
    properties = {
        name: {
            "type": TYPES.get(str(p.get("type")), "string"),
            "description": p.get("description", ""),
        }
        for name, p in (spec.get("parameters") or {}).items()
    }
    name = re.sub(r"[^A-Za-z0-9_]", "_", spec["api_name"])
    return Tool(
        name=name,
        description=spec["api_description"],
        parameters={"type": "object", "properties": properties, "required": []},
        function=_never,
    )


def _plugin(name: str, field: str, summary: str, tools: list[Tool]) -> Plugin:
    top, _, sub = field.partition("/")
    manifest = PluginManifest(
        name=name,
        title=sub or top,
        summary=summary,
        when_to_use=[f"tasks in {sub or top}"],
        tags=[slug(sub)] if sub else [],
        category=slug(top),
    )
    return Plugin(manifest=manifest, source=PluginSource(name=name), tools=tools)


def _unique(name: str, taken: dict[str, Plugin]) -> str:
    while name in taken:
        name += "-x"
    return name


def seal_catalog(grouped: bool) -> tuple[Registry, dict[str, str]]:
    """A registry of Seal-Tools plugins and the plugin that holds each tool (by API name)."""
    tools = load_jsonl(SEAL / "tool.jsonl")
    plugins: dict[str, Plugin] = {}
    owner: dict[str, str] = {}
    if not grouped:
        for spec in tools:
            name = _unique(slug(spec["api_name"]), plugins)
            plugins[name] = _plugin(name, spec["field"], spec["api_description"], [make_tool(spec)])
            owner[spec["api_name"]] = name
        return Registry(plugins=plugins), owner
    fields: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for spec in tools:
        fields[spec["field"]].append(spec)
    for field, specs in fields.items():
        name = _unique(slug(field), plugins)
        summary = f"Tools for {field.replace('/', ': ')}."
        plugins[name] = _plugin(name, field, summary, [make_tool(s) for s in specs])
        owner.update({s["api_name"]: name for s in specs})
    return Registry(plugins=plugins), owner


def bfcl_catalog() -> tuple[Registry, dict[str, str]]:
    """A registry of BFCL-live plugins, one per tool, and the plugin of each tool."""
    plugins: dict[str, Plugin] = {}
    owner: dict[str, str] = {}
    for spec in load_jsonl(BFCL / "tool.jsonl"):
        name = _unique(slug(spec["api_name"]), plugins)
        field = spec.get("field") or spec["api_name"]
        manifest = PluginManifest(
            name=name,
            title=field,
            summary=spec["api_description"][:300] or field,
            when_to_use=[f"tasks of {field}"],
        )
        plugins[name] = Plugin(manifest, PluginSource(name=name), [make_tool(spec)])
        owner[spec["api_name"]] = name
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


def short_tasks(owner: dict[str, str], path: Path = SHORT_TASKS) -> list[tuple[str, set[str]]]:
    """The short task descriptions and the plugins that would do (the tool and its twins)."""
    rows = load_jsonl(path)
    return [(r["task"], {owner[t] for t in [r["tool"], *r["also"]]}) for r in rows]


@dataclass
class Quality:
    """Retrieval quality of one ranker on one query set."""

    recall_at_1: float
    recall_at_5: float
    ndcg_at_10: float
    empty: float  # share of queries without any candidate


def quality(ranked: Sequence[Sequence[str]], truth: Sequence[set[str]]) -> Quality:
    """recall@1 and @5 (share of the relevant plugins found, averaged), binary nDCG@10, and
    the share of queries left with nothing."""
    r1 = r5 = ndcg = 0.0
    for names, relevant in zip(ranked, truth, strict=True):
        r1 += len(relevant & set(names[:1])) / min(len(relevant), 1)
        r5 += len(relevant & set(names[:5])) / min(len(relevant), 5)
        dcg = sum(1 / math.log2(i + 2) for i, n in enumerate(names[:10]) if n in relevant)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
        ndcg += dcg / ideal
    n = max(len(truth), 1)
    empty = sum(1 for names in ranked if not names) / n
    return Quality(r1 / n, r5 / n, ndcg / n, empty)


def any_hit(ranked: Sequence[Sequence[str]], truth: Sequence[set[str]]) -> float:
    """Share of queries with at least one of their plugins among the names."""
    hits = sum(1 for names, good in zip(ranked, truth, strict=True) if good & set(names))
    return hits / max(len(truth), 1)


def all_within(ranked: Sequence[Sequence[str]], truth: Sequence[set[str]], k: int) -> float:
    """Share of queries with every one of their plugins in the first ``k`` names."""
    hits = sum(1 for names, good in zip(ranked, truth, strict=True) if good <= set(names[:k]))
    return hits / max(len(truth), 1)
