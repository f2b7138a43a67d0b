"""The search index of one catalog: lexical documents and embeddings, kept per plugin.

Rows are plugins in the order they were added; a removed or upgraded plugin leaves an empty
row behind and an upgraded one gets a new row, so one change never renumbers the rest.
:meth:`CatalogIndex.sync` brings the index to a registry: only plugins whose digest changed
are analysed and embedded (embeddings come from the :class:`VectorStore` when it has them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from oracle_core.capabilities.search.analyzer import Analyzer
from oracle_core.capabilities.search.documents import (
    NAMING_FIELDS,
    PLUGIN_FIELDS,
    TOOL_FIELDS,
    embedded_texts,
    plugin_digest,
    plugin_fields,
    searchable_tools,
    tool_fields,
)
from oracle_core.capabilities.search.embeddings import Embedder
from oracle_core.capabilities.search.lexical import LexicalIndex
from oracle_core.capabilities.search.vectors import VectorStore
from oracle_core.plugins.registry import Plugin, Registry


class Groups:
    """Items (tools, embedded fields) that each belong to one plugin row, appended grouped.

    Items are appended plugin by plugin in increasing row order, so the live ones of a
    plugin are contiguous and one ``maximum.reduceat`` gives every plugin its best item.
    """

    def __init__(self) -> None:
        self.owner = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=np.bool_)
        self._live = np.zeros(0, dtype=np.int64)
        self._starts = np.zeros(0, dtype=np.int64)
        self._owners = np.zeros(0, dtype=np.int64)
        self._ids: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None  # kept
        self._dense: np.ndarray | None = None
        self._of: dict[int, np.ndarray] = {}  # each plugin row's live items, once read

    def add(self, owners: Sequence[int]) -> None:
        """Append items owned by ``owners`` (plugin rows)."""
        self.owner = np.concatenate([self.owner, np.asarray(owners, dtype=np.int64)])
        self.alive = np.concatenate([self.alive, np.ones(len(owners), dtype=np.bool_)])
        self._refresh()

    def remove_owner(self, row: int) -> None:
        """Mark every item of plugin ``row`` removed."""
        self.alive &= self.owner != row
        self._refresh()

    def _refresh(self) -> None:
        self._ids = None
        self._of = {}
        self._live = np.flatnonzero(self.alive)
        owners = self.owner[self._live]
        self._dense = None
        if len(owners):
            first = np.concatenate([[True], owners[1:] != owners[:-1]])
            self._starts = np.flatnonzero(first)
            self._owners = owners[self._starts]
            sizes = np.diff(np.append(self._starts, len(owners)))
            widest = int(sizes.max())
            if len(sizes) * widest <= 2 * len(owners):
                # Few items each: every plugin's items side by side, the short groups padded
                # with their first item (a maximum is the same), so a few elementwise
                # maxima replace a reduceat. Kept one row an item position (``widest x
                # plugins``): a max over a short last axis is several times slower.
                steps = np.minimum(np.arange(widest), sizes[:, None] - 1)
                self._dense = np.ascontiguousarray(self._live[self._starts[:, None] + steps].T)
        else:
            self._starts = self._owners = np.zeros(0, dtype=np.int64)

    def best(
        self, values: np.ndarray, plugins: int, fill: float, ids: np.ndarray | None = None
    ) -> np.ndarray:
        """Each plugin's best item value (``fill`` for plugins without items).

        ``values`` holds one value per item, or one row of them per query (2-D); with
        ``ids``, one value per distinct vector instead, item ``i`` reading ``values[ids[i]]``.
        """
        live, dense = self._live, self._dense
        if ids is not None:
            if self._ids is None or self._ids[0] is not ids:
                self._ids = (ids, ids[live], None if dense is None else ids[dense])
            live, dense = self._ids[1], self._ids[2]
        elif self._one_each(plugins):  # one item a plugin, in order: nothing to reduce
            if len(self.owner) == plugins:  # none removed: the values as they are
                return np.asarray(values, dtype=np.float32)
            return np.asarray(values[..., live], dtype=np.float32)
        best = np.full((*values.shape[:-1], plugins), fill, dtype=np.float32)
        if dense is not None:
            most = values[..., dense[0]]
            for position in dense[1:]:
                np.maximum(most, values[..., position], out=most)
            best[..., self._owners] = most
        elif len(live):
            items = values[..., live].astype(np.float32, copy=False)
            best[..., self._owners] = np.maximum.reduceat(items, self._starts, axis=-1)
        return best

    def _one_each(self, plugins: int) -> bool:
        """Whether every plugin row has exactly one live item, in row order."""
        return (
            len(self._live) == plugins
            and len(self._owners) == plugins
            and bool(plugins)
            and int(self._owners[-1]) == plugins - 1
        )

    def of(self, row: int) -> np.ndarray:
        """The live items of plugin ``row`` (items are appended in row order: the owners are
        sorted, so a plugin's items are found by bisection; kept until the items change)."""
        items = self._of.get(row)
        if items is None:
            start, end = np.searchsorted(self.owner, [row, row + 1])
            items = np.arange(start, end)[self.alive[start:end]]
            items.flags.writeable = False
            self._of[row] = items
        return items


@dataclass
class CatalogIndex:
    """Every searchable plugin of a catalog, indexed for lexical and semantic ranking.

    Attributes:
        analyzer: how texts become terms.
        embedder: the semantic ranker's embedder (``None``: lexical only).
        store: where embeddings are kept per plugin digest.
        fields: whether short fields are embedded one by one (max-sim).
        plugins: the plugin of each row (``None`` for a removed one).
        digests: each row's plugin digest.
        naming: each row's terms in its :data:`NAMING_FIELDS`.
        plugin_lexical: BM25 over plugin documents (every field once).
        tool_lexical: BM25 over tool documents; ``tools`` owns its rows.
        tool_names: each tool row's tool name.
        sentence_vectors: each plugin row's embedding of what it is for.
        tool_vectors: each tool row's embedding.
        field_vectors: the distinct embedded short fields' vectors (many plugins share a
            title or a ``when_to_use`` line: each is compared with a query once).
        field_ids: each short field row's vector in ``field_vectors``; ``fields_of`` owns
            the rows.
        field_names: which field each short field row is.
        embedded: texts embedded by this index (not read from the store).
        from_cache: whether the last sync found every plugin in the store.
    """

    analyzer: Analyzer
    embedder: Embedder | None
    store: VectorStore
    fields: bool = False
    k1: float = 1.2
    b: float = 0.5
    plugins: list[Plugin | None] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    naming: list[frozenset[str]] = field(default_factory=list)
    row_of: dict[str, int] = field(default_factory=dict)
    tools: Groups = field(default_factory=Groups)
    tool_names: list[str] = field(default_factory=list)
    fields_of: Groups = field(default_factory=Groups)
    field_names: list[str] = field(default_factory=list)
    sentence_vectors: np.ndarray | None = None
    tool_vectors: np.ndarray | None = None
    field_vectors: np.ndarray | None = None
    field_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    field_keys: dict[str, int] = field(default_factory=dict)
    embedded: int = 0
    from_cache: bool = False

    def __post_init__(self) -> None:
        self.plugin_lexical = LexicalIndex(self.k1, self.b)
        self.tool_lexical = LexicalIndex(self.k1, self.b)
        self.naming_lexical = LexicalIndex(self.k1, self.b)  # read for frequencies only
        self._alive: np.ndarray | None = None
        self._products: tuple[np.ndarray, np.ndarray | None] | None = None

    @property
    def alive(self) -> np.ndarray:
        """Which plugin rows hold a plugin (kept up to date by :meth:`sync`)."""
        if self._alive is None or len(self._alive) != len(self.plugins):
            self._alive = np.array([p is not None for p in self.plugins], dtype=np.bool_)
        return self._alive

    @property
    def products(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The catalog's vectors laid out for one matrix product each (built once after a
        sync): what each plugin is for and every tool side by side, transposed
        (``dim x (plugins + tools)``), and the distinct short fields, transposed (``None``
        without them). A query's rows times the first give its cosines to every plugin and
        tool at once."""
        if self._products is None:
            assert self.sentence_vectors is not None and self.tool_vectors is not None
            both = np.concatenate([self.sentence_vectors, self.tool_vectors])
            fields = self.field_vectors
            # Transposed views of row-major vectors (Fortran order): a block of columns is
            # one stretch of memory, which BLAS packs up to a third faster than a block cut
            # out of every row of a row-major matrix.
            self._products = (
                np.ascontiguousarray(both, dtype=np.float32).T,
                np.ascontiguousarray(fields, dtype=np.float32).T
                if fields is not None and len(fields)
                else None,
            )
        return self._products

    @property
    def semantic(self) -> bool:
        """Whether the index has embeddings."""
        return self.embedder is not None and self.sentence_vectors is not None

    def _salt(self) -> str:
        name = self.embedder.name if self.embedder is not None else "lexical"
        return f"{name}|fields={self.fields}|{self.analyzer.name}|k1={self.k1}|b={self.b}"

    def sync(self, registry: Registry) -> None:
        """Bring the index to ``registry``: remove what left, add what is new or changed."""
        wanted = {p.name: p for p in registry.listed()}
        salt = self._salt()
        digests = {name: plugin_digest(p, salt) for name, p in wanted.items()}
        for name, row in list(self.row_of.items()):
            if digests.get(name) != self.digests[row]:
                self._remove(row)
        new = [p for name, p in wanted.items() if name not in self.row_of]
        self.from_cache = self._add(new, [digests[p.name] for p in new])
        self.store.save(set(digests.values()))

    def _remove(self, row: int) -> None:
        plugin = self.plugins[row]
        if plugin is None:
            return
        self.plugins[row] = None
        self._alive = None
        del self.row_of[plugin.name]
        self.plugin_lexical.remove([row])
        self.naming_lexical.remove([row])
        self.tool_lexical.remove(np.flatnonzero((self.tools.owner == row) & self.tools.alive))
        self.tools.remove_owner(row)
        self.fields_of.remove_owner(row)

    def _add(self, plugins: Sequence[Plugin], digests: Sequence[str]) -> bool:
        """Index ``plugins``; whether all their embeddings came from the store."""
        start = len(self.plugins)
        analyze = self.analyzer.terms
        plugin_docs: list[list[str]] = []
        tool_docs: list[list[str]] = []
        tool_owners: list[int] = []
        field_owners: list[int] = []
        for offset, plugin in enumerate(plugins):
            texts = plugin_fields(plugin)
            plugin_docs.append([t for f in PLUGIN_FIELDS for t in analyze(texts[f])])
            self.naming.append(frozenset(t for f in NAMING_FIELDS for t in analyze(texts[f])))
            for tool in searchable_tools(plugin):
                parts = tool_fields(tool)
                tool_docs.append([t for f in TOOL_FIELDS for t in analyze(parts[f])])
                tool_owners.append(start + offset)
                self.tool_names.append(tool.name)
            self.plugins.append(plugin)
            self.digests.append(digests[offset])
            self.row_of[plugin.name] = start + offset
        self.plugin_lexical.add(plugin_docs)
        self.naming_lexical.add([sorted(terms) for terms in self.naming[start:]])
        self.tool_lexical.add(tool_docs)
        self.tools.add(tool_owners)
        cached = self._embed(plugins, digests, start, field_owners)
        self.fields_of.add(field_owners)
        return cached

    def _embed(
        self, plugins: Sequence[Plugin], digests: Sequence[str], start: int, owners: list[int]
    ) -> bool:
        """Embed ``plugins`` (or read them from the store) and append their vectors."""
        all_texts = [embedded_texts(p, self.fields) for p in plugins]
        vectors: list[np.ndarray | None] = [self.store.get(d) for d in digests]
        missing = [i for i, v in enumerate(vectors) if v is None or len(v) != len(all_texts[i])]
        if self.embedder is None:
            for i in missing:
                self.store.put(digests[i], np.zeros((len(all_texts[i]), 0), np.float32))
            for offset, texts in enumerate(all_texts):
                fields = [(w, t) for w, t in texts if w != "plugin" and not w.startswith("tool:")]
                owners += [start + offset] * len(fields)
                self.field_names += [w for w, _ in fields]
            return not missing
        if missing:
            flat = [text for i in missing for _, text in all_texts[i]]
            matrix = self.embedder.embed(flat).astype(np.float32, copy=False)
            self.embedded += len(flat)
            at = 0
            for i in missing:
                count = len(all_texts[i])
                vectors[i] = matrix[at : at + count]
                self.store.put(digests[i], matrix[at : at + count])
                at += count
        sentences: list[np.ndarray] = []
        tools: list[np.ndarray] = []
        distinct: list[np.ndarray] = []
        ids: list[int] = []
        for offset, (texts, rows) in enumerate(zip(all_texts, vectors, strict=True)):
            assert rows is not None
            for (where, text), vector in zip(texts, rows, strict=True):
                if where == "plugin":
                    sentences.append(vector)
                elif where.startswith("tool:"):
                    tools.append(vector)
                else:
                    key = text.strip().lower()
                    if key not in self.field_keys:
                        self.field_keys[key] = len(self.field_keys)
                        distinct.append(vector)
                    ids.append(self.field_keys[key])
                    owners.append(start + offset)
                    self.field_names.append(where)
        self.sentence_vectors = _stack(self.sentence_vectors, sentences)
        self.tool_vectors = _stack(self.tool_vectors, tools)
        self.field_vectors = _stack(self.field_vectors, distinct)
        self.field_ids = np.concatenate([self.field_ids, np.array(ids, dtype=np.int64)])
        self._products = None
        return not missing


def _stack(old: np.ndarray | None, rows: list[np.ndarray]) -> np.ndarray:
    """``old`` with ``rows`` appended (an empty matrix keeps the vectors' width)."""
    width = rows[0].shape[-1] if rows else (old.shape[1] if old is not None else 1)
    new = np.array(rows, dtype=np.float32).reshape(len(rows), width)
    if old is None or not len(old):
        return new if len(new) else np.zeros((0, width), np.float32)
    return np.concatenate([old, new.reshape(len(rows), old.shape[1])]) if len(rows) else old
