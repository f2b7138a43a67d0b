"""The search index over a catalog: the texts a model would read, split, weighted and stored.

Two lexical indexes (``bm25s``, Lucene's BM25) are built from the registry: one document per
plugin (its manifest and every tool's text) and one per tool (the tool's own text), so a
plugin with hundreds of tools is still found by the one tool that fits. Each field is
repeated by its weight before indexing, the usual BM25F approximation; the weights were tuned
on data (``bench/search.py --tune``), not guessed. With an embedder, both document kinds are
also embedded for the semantic ranker.

The built index is saved under ``$ORACLE_HOME/search/<digest>``, where the digest covers every
indexed text and the embedder, so an unchanged catalog is loaded, never rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from oracle_core.authoring.tools.tool import Tool
from oracle_core.plugins.registry import Plugin, Registry

if TYPE_CHECKING:
    import bm25s  # type: ignore[import-untyped]

    from oracle_core.capabilities.embeddings import Embedder

FORMAT = "oracle-search-3"
"""Changes whenever what is stored changes, so an old cache is never misread."""

PLUGIN_WEIGHTS: Mapping[str, int] = {
    "name": 1,
    "title": 1,
    "summary": 1,
    "when_to_use": 2,
    "examples": 2,
    "tags": 2,
    "category": 1,
    "tool_names": 3,
    "tool_descriptions": 2,
    "parameters": 1,
}
"""Times each plugin field is repeated in its document.

Tuned by coordinate ascent (``bench/search.py --tune``, weights 1 to 6: every field counts)
on Seal-Tools ``test_out_domain`` over both benchmark catalogs; ``examples`` does not occur
in that data and keeps its prior weight.
"""

TOOL_WEIGHTS: Mapping[str, int] = {"tool_name": 4, "tool_description": 1, "parameters": 1}
"""Times each tool field is repeated in its document (tuned the same way)."""

PLAIN_PLUGIN_WEIGHTS: Mapping[str, int] = dict.fromkeys(PLUGIN_WEIGHTS, 1)
"""Every plugin field once: the untuned baseline ``bench/search.py`` prints."""

PLAIN_TOOL_WEIGHTS: Mapping[str, int] = dict.fromkeys(TOOL_WEIGHTS, 1)
"""Every tool field once (the untuned baseline)."""

NAMING_FIELDS = (
    "name",
    "title",
    "summary",
    "when_to_use",
    "examples",
    "tags",
    "category",
    "tool_names",
)
"""The short plugin fields that say what a plugin is for (not tool descriptions, parameters).

A query word found only in the long fields is weaker evidence of a fit (see
:data:`oracle_core.capabilities.search.WEAK_FIELD_SHARE`): "hello" or "today" in a
parameter's description says little about what the plugin does.
"""

BM25_K1 = 3.0
"""BM25's term frequency saturation for the plugin and tool indexes.

Higher than bm25s's 1.5 so a term repeated by its field's weight still counts more: on
Seal-Tools ``test_out_domain``, recall@5 rises up to 3 and stays flat to 6.
"""

BM25_B = 0.75
"""BM25's document length normalization (bm25s's default; 0.5 to 0.9 rank the same)."""

KEEP_CACHES = 4
"""Index versions kept under ``$ORACLE_HOME/search`` (other catalogs, other embedders)."""

_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "get",
        "give",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "show",
        "should",
        "so",
        "some",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "us",
        "want",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "would",
        "you",
        "your",
        "e",
        "g",
    ]
)


class Analyzer:
    """Turns text into search terms: camelCase and snake_case split, stop words out, stemmed.

    One analyzer belongs to one index; it remembers the stems it has computed.

    Args:
        stem: English stemming (Snowball); ``False`` keeps words as they are (the plain
            baseline of ``bench/search.py``).
    """

    def __init__(self, stem: bool = True) -> None:
        import Stemmer  # type: ignore[import-not-found]

        self.stem = stem
        self._stemmer = Stemmer.Stemmer("english")
        self._stems: dict[str, str] = {}

    @property
    def name(self) -> str:
        """What the index's digest records of this analyzer."""
        return "snowball-english" if self.stem else "no-stemming"

    def terms(self, text: str) -> list[str]:
        """The search terms of ``text``, in order, repeats kept (numbers alone are dropped)."""
        words = _WORD.findall(_CAMEL.sub(" ", text).lower())
        out: list[str] = []
        for word in words:
            if word in _STOPWORDS or word.isdigit():
                continue
            stem = self._stems.get(word)
            if stem is None:
                stem = self._stems[word] = self._stemmer.stemWord(word) if self.stem else word
            out.append(stem)
        return out


def searchable_tools(plugin: Plugin) -> list[Tool]:
    """The tools of ``plugin`` that search may show: every tool that is not silent."""
    return [t for t in plugin.tools if (t.visibility or plugin.visibility) != "silent"]


def _parameter_text(parameters: Mapping[str, Any]) -> str:
    props = parameters.get("properties") or {}
    parts: list[str] = []
    for name, spec in props.items() if isinstance(props, Mapping) else ():
        parts.append(str(name))
        if isinstance(spec, Mapping) and isinstance(spec.get("description"), str):
            parts.append(spec["description"])
    return " ".join(parts)


def plugin_fields(plugin: Plugin) -> dict[str, str]:
    """The texts of one plugin's document, by field (silent tools left out)."""
    m = plugin.manifest
    tools = searchable_tools(plugin)
    return {
        "name": m.name.replace("-", " ").replace("_", " "),
        "title": m.title if m.title != m.name else "",
        "summary": m.summary,
        "when_to_use": " ".join(m.when_to_use),
        "examples": " ".join(e.user for e in m.examples),
        "tags": " ".join(m.tags),
        "category": m.category or "",
        "tool_names": " ".join(t.name.replace("_", " ") for t in tools),
        "tool_descriptions": " ".join(t.description for t in tools),
        "parameters": " ".join(_parameter_text(t.parameters) for t in tools),
    }


def tool_fields(tool: Tool) -> dict[str, str]:
    """The texts of one tool's document, by field."""
    return {
        "tool_name": tool.name.replace("_", " "),
        "tool_description": tool.description,
        "parameters": _parameter_text(tool.parameters),
    }


def plugin_sentence(plugin: Plugin) -> str:
    """What the semantic ranker embeds for a plugin: what it is for, in a few sentences."""
    m = plugin.manifest
    parts = [m.title, m.summary, *m.when_to_use, *(e.user for e in m.examples), *m.tags]
    return ". ".join(p for p in parts if p)


def tool_sentence(tool: Tool) -> str:
    """What the semantic ranker embeds for a tool: its name in words and its description."""
    fields = tool_fields(tool)
    return f"{fields['tool_name']}. {fields['tool_description']}"


def weighted_terms(
    analyzer: Analyzer, fields: Mapping[str, str], weights: Mapping[str, int]
) -> list[str]:
    """One document's terms: each field's terms repeated by the field's weight."""
    terms: list[str] = []
    for field, weight in weights.items():
        if weight > 0 and fields.get(field):
            terms += analyzer.terms(fields[field]) * weight
    return terms


def _bm25(corpus: list[list[str]], k1: float = BM25_K1, b: float = BM25_B) -> bm25s.BM25:
    import bm25s

    retriever = bm25s.BM25(k1=k1, b=b)
    # An empty document still needs one token so bm25s keeps every row; an empty catalog
    # gets one placeholder row that no search ever reads.
    retriever.index([doc or ["\x00"] for doc in corpus] or [["\x00"]], show_progress=False)
    return retriever


@dataclass
class CatalogIndex:
    """A built (or loaded) index of one registry's searchable plugins and tools.

    Attributes:
        plugins: the searchable plugin names, in registration order (index rows).
        tools: ``(plugin row, tool name)`` for every searchable tool (tool index rows).
        plugin_bm25: the BM25 index of plugin documents.
        tool_bm25: the BM25 index of tool documents.
        naming_bm25: the BM25 index of each plugin's :data:`NAMING_FIELDS` alone (once each),
            read only to tell where a query word matched.
        document_frequency: in how many plugin documents each term occurs.
        plugin_vectors: unit embeddings of the plugins, or ``None`` without an embedder.
        tool_vectors: unit embeddings of the tools, or ``None``.
        from_cache: whether it was loaded from the cache rather than built.
    """

    plugins: list[str]
    tools: list[tuple[int, str]]
    plugin_bm25: bm25s.BM25
    tool_bm25: bm25s.BM25
    naming_bm25: bm25s.BM25
    document_frequency: dict[str, int]
    plugin_vectors: np.ndarray | None = None
    tool_vectors: np.ndarray | None = None
    from_cache: bool = False

    @classmethod
    def build(
        cls,
        registry: Registry,
        analyzer: Analyzer,
        embedder: Embedder | None = None,
        plugin_weights: Mapping[str, int] = PLUGIN_WEIGHTS,
        tool_weights: Mapping[str, int] = TOOL_WEIGHTS,
        *,
        k1: float = BM25_K1,
        b: float = BM25_B,
    ) -> CatalogIndex:
        """Index every non-silent plugin of ``registry`` and its non-silent tools.

        ``k1`` and ``b`` are BM25's parameters (term frequency saturation, length
        normalization) for the plugin and tool indexes.
        """
        listed = registry.listed()
        names = [p.name for p in listed]
        bound = [(row, t) for row, p in enumerate(listed) for t in searchable_tools(p)]
        plugin_docs = [weighted_terms(analyzer, plugin_fields(p), plugin_weights) for p in listed]
        tool_docs = [weighted_terms(analyzer, tool_fields(t), tool_weights) for _, t in bound]
        naming = dict.fromkeys(NAMING_FIELDS, 1)
        naming_docs = [weighted_terms(analyzer, plugin_fields(p), naming) for p in listed]
        frequency: dict[str, int] = {}
        for doc in plugin_docs:
            for term in set(doc):
                frequency[term] = frequency.get(term, 0) + 1
        tools = [(row, t.name) for row, t in bound]
        index = cls(
            names,
            tools,
            _bm25(plugin_docs, k1, b),
            _bm25(tool_docs, k1, b),
            _bm25(naming_docs),
            frequency,
        )
        if embedder is not None:
            index.plugin_vectors = embedder.embed([plugin_sentence(p) for p in listed])
            index.tool_vectors = embedder.embed([tool_sentence(t) for _, t in bound])
        return index

    def save(self, folder: Path) -> None:
        """Write the index to ``folder`` atomically (a concurrent writer's copy is kept)."""
        folder.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".building-", dir=folder.parent))
        try:
            self.plugin_bm25.save(str(work / "plugins"), show_progress=False)
            self.tool_bm25.save(str(work / "tools"), show_progress=False)
            self.naming_bm25.save(str(work / "naming"), show_progress=False)
            meta = {
                "format": FORMAT,
                "plugins": self.plugins,
                "tools": self.tools,
                "document_frequency": self.document_frequency,
            }
            (work / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
            if self.plugin_vectors is not None and self.tool_vectors is not None:
                np.save(work / "plugin_vectors.npy", self.plugin_vectors)
                np.save(work / "tool_vectors.npy", self.tool_vectors)
            try:
                os.replace(work, folder)
            except OSError:  # another process saved the same index first
                shutil.rmtree(work, ignore_errors=True)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        _prune(folder.parent, keep=folder)

    @classmethod
    def load(cls, folder: Path, semantic: bool) -> CatalogIndex | None:
        """The index saved in ``folder``, or ``None`` when it is missing or unreadable."""
        import bm25s

        try:
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
            if meta.get("format") != FORMAT:
                return None
            index = cls(
                plugins=list(meta["plugins"]),
                tools=[(int(r), str(t)) for r, t in meta["tools"]],
                plugin_bm25=bm25s.BM25.load(str(folder / "plugins"), show_progress=False),
                tool_bm25=bm25s.BM25.load(str(folder / "tools"), show_progress=False),
                naming_bm25=bm25s.BM25.load(str(folder / "naming"), show_progress=False),
                document_frequency=dict(meta["document_frequency"]),
                from_cache=True,
            )
            if semantic:
                index.plugin_vectors = np.load(folder / "plugin_vectors.npy")
                index.tool_vectors = np.load(folder / "tool_vectors.npy")
            os.utime(folder)  # most recently used: pruned last
            return index
        except (OSError, ValueError, KeyError, TypeError):
            return None


def _prune(root: Path, keep: Path) -> None:
    """Remove all but the most recently used :data:`KEEP_CACHES` index folders."""
    try:
        folders = sorted(
            (p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
    except OSError:
        return
    for old in [p for p in folders if p != keep][KEEP_CACHES - 1 :]:
        shutil.rmtree(old, ignore_errors=True)


def catalog_digest(
    registry: Registry,
    extra: Iterable[str] = (),
    weights: tuple[Mapping[str, int], Mapping[str, int]] = (PLUGIN_WEIGHTS, TOOL_WEIGHTS),
) -> str:
    """A digest of everything the index is built from, plus ``extra`` (the embedder's name).

    Any change to an indexed text (a manifest, a tool's description or parameters), to the
    set of plugins or to the weights gives another digest, so the cache is rebuilt.
    """
    digest = hashlib.sha256(FORMAT.encode())
    digest.update(json.dumps(weights, sort_keys=True).encode())
    for part in extra:
        digest.update(b"\x01" + part.encode())
    for plugin in registry.listed():
        digest.update(b"\x02" + plugin.manifest.model_dump_json().encode())
        for tool in searchable_tools(plugin):
            digest.update(b"\x03" + json.dumps(tool_fields(tool)).encode())
    return digest.hexdigest()[:32]


def term_postings(
    index: bm25s.BM25, terms: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every occurrence of ``terms`` in ``index``: its rows, BM25 scores and term positions.

    Returns:
        ``(rows, scores, which)``: for each (term, document) pair, the document's row, the
        term's BM25 score in it, and the term's position in ``terms``. Unknown terms have none.
    """
    vocab: dict[str, int] = index.vocab_dict
    matrix: dict[str, np.ndarray] = index.scores
    known = [(position, vocab[t]) for position, t in enumerate(terms) if t in vocab]
    if not known:
        return np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, np.int64)
    positions, ids = np.array(known, dtype=np.int64).T
    indptr = matrix["indptr"]
    starts = indptr[ids].astype(np.int64)
    lengths = indptr[ids + 1] - starts
    offsets = np.cumsum(lengths) - lengths  # where each term's run begins in the result
    at = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - offsets, lengths)
    return matrix["indices"][at], matrix["data"][at], np.repeat(positions, lengths)


def term_matrix(index: bm25s.BM25, terms: Sequence[str], count: int) -> np.ndarray:
    """One row per term of ``terms``: its BM25 score in each of the ``count`` rows of ``index``."""
    rows, scores, which = term_postings(index, terms)
    matrix = np.zeros((len(terms), count), dtype=np.float32)
    matrix[which, rows] = scores
    return matrix
