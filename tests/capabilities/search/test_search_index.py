"""The index keeps up with the catalog: one plugin added or upgraded is embedded alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from oracle_core.authoring.manifest import PluginManifest
from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.search import Analyzer, CapabilitySearch
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.registry import Plugin, Registry


class CountingEmbedder:
    """A deterministic bag-of-words embedder that records every text it embeds."""

    name = "counting-test"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Any) -> np.ndarray:
        self.texts += list(texts)
        rows = np.zeros((len(texts), 32), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in Analyzer().terms(text):
                rows[row, sum(map(ord, word)) % 32] += 1.0
            rows[row, 0] += 1e-3  # never a zero vector
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _never(**_: Any) -> Any:
    raise AssertionError("not called")


def plugin(name: str, summary: str, tool: str, description: str) -> Plugin:
    manifest = PluginManifest(name=name, summary=summary, when_to_use=[summary])
    parameters = {"type": "object", "properties": {"value": {"type": "string"}}}
    return Plugin(manifest, PluginSource(name=name), [Tool(tool, description, parameters, _never)])


def catalog(count: int = 30) -> dict[str, Plugin]:
    topics = ["tides", "invoices", "glaciers", "trains", "stamps", "volcanoes"]
    return {
        f"p{i}": plugin(
            f"p{i}", f"Everything about {topics[i % 6]} {i}.", f"list_{i}", f"List {i}."
        )
        for i in range(count)
    }


def _embedded_plugins(texts: list[str]) -> set[str]:
    return {word for text in texts for word in text.split() if word.startswith("p-mark-")}


def test_adding_one_plugin_embeds_that_plugin_only() -> None:
    embedder = CountingEmbedder()
    plugins = catalog()
    search = CapabilitySearch(Registry(plugins=plugins), embedder=embedder)
    search.search(["tides"])
    before = len(embedder.texts)
    added = plugin("birds", "Count the birds in a photo.", "count_birds", "Count birds.")

    search.update(Registry(plugins={**plugins, "birds": added}))
    new_texts = embedder.texts[before:]

    assert new_texts  # the new plugin was embedded ...
    assert all("bird" in text.lower() for text in new_texts)  # ... and nothing else
    assert search.search(["count the birds"])[0][0].plugin.name == "birds"


def test_upgrading_one_plugin_re_embeds_it_alone_and_drops_its_old_texts() -> None:
    embedder = CountingEmbedder()
    plugins = catalog()
    search = CapabilitySearch(Registry(plugins=plugins), embedder=embedder)
    search.search(["tides"])
    before = len(embedder.texts)
    upgraded = plugin("p3", "Track parcels and deliveries.", "track_parcel", "Track a parcel.")

    search.update(Registry(plugins={**plugins, "p3": upgraded}))

    new_texts = embedder.texts[before:]
    assert new_texts and all("parcel" in t.lower() or t == "p3" for t in new_texts)
    assert search.search(["track my parcel"])[0][0].plugin.name == "p3"
    assert "p3" not in [c.plugin.name for c in search.search(["trains 3"])[0]][:1]


def test_removing_a_plugin_takes_it_out_of_every_result() -> None:
    plugins = catalog()
    search = CapabilitySearch(Registry(plugins=plugins), embedder=CountingEmbedder())
    assert "p1" in [c.plugin.name for c in search.search(["invoices 1"])[0]]

    search.update(Registry(plugins={k: v for k, v in plugins.items() if k != "p1"}))

    assert "p1" not in [c.plugin.name for c in search.search(["invoices 1"])[0]]
    assert "p1" not in search.rank(["invoices 1"], "fused", depth=50)[0]


def test_a_new_process_reads_every_unchanged_plugin_from_the_cache(tmp_path: Path) -> None:
    plugins = catalog()
    CapabilitySearch(Registry(plugins=plugins), tmp_path, CountingEmbedder()).search(["tides"])
    embedder = CountingEmbedder()
    added = plugin("birds", "Count the birds in a photo.", "count_birds", "Count birds.")

    again = CapabilitySearch(Registry(plugins={**plugins, "birds": added}), tmp_path, embedder)
    again.search(["birds"])

    assert embedder.texts and all("bird" in t.lower() for t in embedder.texts)
    assert not again.index.from_cache  # one plugin was new
    third = CapabilitySearch(
        Registry(plugins={**plugins, "birds": added}), tmp_path, CountingEmbedder()
    )
    assert third.index.from_cache and third.index.embedded == 0


def test_the_index_and_a_rebuilt_one_rank_the_same_after_updates() -> None:
    plugins = catalog()
    search = CapabilitySearch(Registry(plugins=plugins), embedder=CountingEmbedder())
    search.search(["tides"])
    changed = {**plugins, "p5": plugin("p5", "Weather radar.", "radar", "Rain radar.")}
    del changed["p7"]
    search.update(Registry(plugins=changed))
    fresh = CapabilitySearch(Registry(plugins=changed), embedder=CountingEmbedder())

    queries = ["tides 0", "rain radar", "glaciers", "List 11.", "stamps and trains"]
    for one, other in zip(search.scores(queries), fresh.scores(queries), strict=True):
        mine, theirs = search.fused(one), fresh.fused(other)
        for name in changed:  # rows differ, scores by plugin do not
            a, b = mine[search.index.row_of[name]], theirs[fresh.index.row_of[name]]
            assert abs(float(a) - float(b)) < 1e-4, (name, a, b)
