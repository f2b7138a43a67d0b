"""The findability check: do requests in users' words find a plugin through search?

``assert_findable(plugin)`` searches for the plugin's own examples (and any requests the
author adds) the way the model does, with the search meta-tool, in a catalog of about two
thousand other tools shipped with oracle-core (``data/distractors.json.gz``, from BFCL-live
and Seal-Tools, both Apache-2.0), and fails when a request does not find the plugin within
the first ``within`` candidates, naming the request, the rank it got and what outranked it,
with hints on the manifest (:mod:`oracle_core.plugins.findability`)::

    from oracle_core.testing import assert_findable

    def test_requests_find_it() -> None:
        assert_findable(my_plugin, requests=["convert 20 euros to dollars"], within=3)

Building the catalog's index takes a second or two; a :class:`Findability` built once (e.g.
in a session-scoped fixture) serves any number of checks.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from oracle_core.authoring.manifest import PluginManifest
from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.search import CapabilitySearch, Embedder, WordLlamaEmbedder
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.findability import findability_advice
from oracle_core.plugins.registry import Plugin, Registry

DEFAULT_WITHIN = 3
"""A request must find the plugin within this many candidates (the model sees six)."""


class FindabilityError(AssertionError):
    """Requests did not find a plugin; ``misses`` holds one :class:`Found` each."""

    def __init__(self, plugin: str, misses: list[Found], total: int, hints: list[str]) -> None:
        lines = [f"  - {m.describe()}" for m in misses]
        if hints:
            lines += ["  hints:", *(f"    - {h}" for h in hints)]
        super().__init__(
            f"plugin {plugin!r} is not found within the first {misses[0].within} candidates "
            f"for {len(misses)} of {total} request(s):\n" + "\n".join(lines)
        )
        self.plugin = plugin
        self.misses = misses


@dataclass(frozen=True)
class Found:
    """Where one request found the plugin.

    Attributes:
        request: the request searched.
        rank: the plugin's place among the candidates (1 is first), or ``None`` when it is
            not among them.
        ranked: its place in the ranking before the fit rule (``None``: not in the first 50).
        above: the candidates returned before it (names), or all of them when it is missing.
        within: the place it had to reach.
    """

    request: str
    rank: int | None
    ranked: int | None
    above: tuple[str, ...]
    within: int

    @property
    def ok(self) -> bool:
        """Whether the plugin was found within the first ``within``."""
        return self.rank is not None and self.rank <= self.within

    def describe(self) -> str:
        """One sentence: the request, its rank and what outranked the plugin."""
        if self.rank is not None:
            where = f"ranked {self.rank}"
        elif self.ranked is not None:
            where = f"not returned (ranked {self.ranked} before the fit rule)"
        else:
            where = "not returned, nor in the first 50 before the fit rule"
        if not self.above:
            return f"{self.request!r}: {where}; search returned nothing for it"
        return f"{self.request!r}: {where}; outranked by {', '.join(self.above[:6])}"


def distractors() -> list[Plugin]:
    """The shipped distractor catalog: one plugin per tool."""
    raw = resources.files("oracle_core.testing").joinpath("data/distractors.json.gz")
    rows = json.loads(gzip.decompress(raw.read_bytes()))["tools"]
    plugins = []
    for source, name, description, parameters in rows:
        plugin_name = f"x-{name.lower().replace('_', '-')}"[:60].rstrip("-")
        properties = {p: {"type": "string"} for p in parameters}
        tool = Tool(
            name=name,
            description=description,
            parameters={"type": "object", "properties": properties},
            function=_never,
        )
        manifest = PluginManifest(
            name=plugin_name, summary=description, when_to_use=[f"tasks of {source}"]
        )
        plugins.append(Plugin(manifest, PluginSource(name=plugin_name), [tool]))
    return plugins


def _never(**_: Any) -> Any:
    raise AssertionError("distractor tools are never called")


def plugin_of(obj: Any) -> Plugin:
    """The assembled :class:`Plugin` of a plugin module, object or dotted module name."""
    if isinstance(obj, Plugin):
        return obj
    from oracle_core.oracle import Oracle
    from oracle_core.settings import Settings
    from oracle_core.testing.harness import import_plugin

    with tempfile.TemporaryDirectory(prefix="oracle-findability-") as home:
        oracle = Oracle(
            [import_plugin(obj)],
            entry_points=False,
            settings=Settings.from_env({"ORACLE_HOME": home}),
        )
        registry = oracle.registry
    if registry.failures:
        reasons = "; ".join(str(f) for f in registry.failures)
        raise AssertionError(f"the plugin could not be assembled: {reasons}")
    return next(iter(registry.plugins.values()))


class Findability:
    """The distractor catalog, indexed once, in which plugins' requests are searched.

    Args:
        embedder: the semantic ranker (default: wordllama, as the default install searches).
        cache: a folder to keep the catalog's embeddings in between runs (``None``: none).
    """

    def __init__(self, embedder: Embedder | None = None, cache: Path | None = None) -> None:
        self.embedder = embedder if embedder is not None else WordLlamaEmbedder()
        self.cache = cache
        self._catalog = distractors()
        self._search: CapabilitySearch | None = None

    def _search_with(self, plugin: Plugin) -> CapabilitySearch:
        plugins = {p.name: p for p in self._catalog if p.name != plugin.name}
        registry = Registry(plugins={**plugins, plugin.name: plugin})
        if self._search is None:
            self._search = CapabilitySearch(registry, self.cache, self.embedder)
        else:
            self._search.update(registry)  # only the plugin under test is indexed again
        return self._search

    def find(
        self, plugin: Any, requests: Sequence[str], within: int = DEFAULT_WITHIN
    ) -> list[Found]:
        """Where each of ``requests`` finds ``plugin`` (a module, object or :class:`Plugin`)."""
        target = plugin_of(plugin)
        search = self._search_with(target)
        found = search.search(list(requests), limit=max(within, 6))
        ranked = search.rank(list(requests), depth=50)
        out = []
        for request, candidates, order in zip(requests, found, ranked, strict=True):
            names = [c.plugin.name for c in candidates]
            rank = names.index(target.name) + 1 if target.name in names else None
            above = tuple(names[: rank - 1] if rank else names)
            place = order.index(target.name) + 1 if target.name in order else None
            out.append(Found(request, rank, place, above, within))
        return out

    def check(
        self,
        plugin: Any,
        requests: Sequence[str] = (),
        *,
        within: int = DEFAULT_WITHIN,
        examples: bool = True,
    ) -> None:
        """Raise :class:`FindabilityError` unless every request finds ``plugin`` in time.

        The requests are the plugin's examples' user texts (unless ``examples`` is false)
        followed by ``requests``.
        """
        target = plugin_of(plugin)
        if target.visibility == "silent":
            raise AssertionError(
                f"plugin {target.name!r} is silent: search never finds silent plugins"
            )
        asked = [*(e.user for e in target.manifest.examples if examples), *requests]
        if not asked:
            raise AssertionError(
                f"plugin {target.name!r} has no examples and no requests were given: add "
                "examples to its manifest or pass requests=[...]"
            )
        results = self.find(target, asked, within)
        misses = [f for f in results if not f.ok]
        if misses:
            hints = [str(w) for w in findability_advice(target.manifest, target.tools)]
            raise FindabilityError(target.name, misses, len(asked), hints)


def assert_findable(
    plugin: Any,
    requests: Sequence[str] = (),
    *,
    within: int = DEFAULT_WITHIN,
    examples: bool = True,
    findability: Findability | None = None,
) -> None:
    """Fail unless the plugin's examples and ``requests`` find it within ``within``.

    Args:
        plugin: the plugin module or object (as given to ``check_plugin``), or its dotted
            module name.
        requests: more requests in users' words.
        within: the place each request must find it at (1 = first).
        examples: also search for the manifest's examples' user texts.
        findability: a catalog built once to reuse (default: built for this call).

    Raises:
        FindabilityError: naming each request that missed, the rank it got and what
            outranked the plugin, with hints on the manifest.
    """
    (findability or Findability()).check(plugin, requests, within=within, examples=examples)
