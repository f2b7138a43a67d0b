"""The start-up cache: which installed plugins were found sound, and their tools' schemas.

Building a tool's JSON schema and checking it costs about a millisecond a tool, too much to
pay for thousands of tools on every start. So once a distribution's plugin has passed the
tool and example checks, its tools' schemas are kept in ``$ORACLE_HOME/cache/plugins-<digest>.json``
and a later start with the same files trusts them: no schema is built until a request
shows a tool or a call validates its arguments. A plugin that gave nothing but a manifest
and tools also gets a deferral record (:mod:`oracle_core.plugins.deferred`: its manifest,
tools, hooks and configuration digest, keyed by the stamps of its ``RECORD`` and of every
module its import loaded), and a later start with the same files and configuration does
not import it at all; any other plugin is still imported and its hooks called on every
start (they may depend on configuration), only the per-tool work being skipped.

An entry is trusted only when all of this is unchanged:

- the distribution's name and version, and the size and modification time of its
  ``RECORD`` (else ``METADATA``), which a reinstall rewrites;
- the size and modification time of every file defining the plugin object, its tool
  functions, and the classes their type hints name (an edited module counts as changed
  even without a reinstall);
- the validated manifest and each tool's signature (see
  :func:`~oracle_core.authoring.tools.tool.tool_fingerprint`), which configuration may change.

The file's name digests the cache format and the versions of oracle-core, pydantic and
Python, so an upgrade of any starts a new file. Plugins given in code have no
distribution and are never cached. A file that cannot be read or does not have the
expected shape is ignored and rewritten; a file that cannot be written is left alone.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import operator
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pydantic

from oracle_core.authoring.manifest import PluginManifest
from oracle_core.authoring.tools.tool import Tool, hint_classes, prime_schema, tool_fingerprint
from oracle_core.plugins.discovery import PluginSource, normalize

log = logging.getLogger("oracle_core.plugins")

CACHE_FORMAT = 3
"""Raised whenever what an entry means changes: old files are then never read."""


def _file_digest() -> str:
    from oracle_core.version import __version__

    text = f"{CACHE_FORMAT}|{__version__}|{pydantic.VERSION}|{sys.version_info[:2]}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class StartupCache:
    """The start-up cache of one ``ORACLE_HOME``, read once and written once per assembly.

    Args:
        folder: where the cache file lives (``$ORACLE_HOME/cache``).
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / f"plugins-{_file_digest()}.json"
        self._entries: dict[str, dict[str, Any]] | None = None
        self._changed = False
        self._prints: tuple[tuple[Tool, ...], list[str]] = ((), [])
        self._stamps: dict[str, tuple[str, int, int] | None] = {}
        self._keyed: dict[str, list[str]] = {}

    def _fingerprints(self, tools: Sequence[Tool]) -> list[str]:
        """Each tool's fingerprint; those of the last tools asked for are computed once.

        :meth:`key`, :meth:`trusted` and :meth:`store` ask for the same plugin's tools in
        turn, and a fingerprint reprs and digests every parameter.
        """
        last, prints = self._prints
        if len(last) == len(tools) and all(map(operator.is_, last, tools)):
            return prints
        prints = [tool_fingerprint(t) for t in tools]
        self._prints = (tuple(tools), prints)
        return prints

    def key(self, source: PluginSource, obj: object, manifest: PluginManifest,
            tools: Sequence[Tool]) -> str | None:  # fmt: skip
        """What an entry for this plugin must match, or ``None`` if it cannot be cached.

        Args:
            source: where the plugin comes from (only distributions are cached).
            obj: the imported plugin object.
            manifest: its validated manifest.
            tools: the tools its ``oracle_tools`` returned.
        """
        if source.distribution is None or source.metadata_path is None:
            return None
        sources = _source_files(obj, tools)
        files = {self._stamp(source.metadata_path)}
        for path in sources:
            files.add(self._stamp(path))
        if None in files:
            return None  # a file we cannot stat: never trust what we cannot check
        self._keyed[_name(source)] = [source.metadata_path, *sources]
        parts = [
            source.distribution,
            source.version,
            sorted(files, key=str),
            manifest.model_dump_json(),
            self._fingerprints(tools),
        ]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()

    def _stamp(self, path: str) -> tuple[str, int, int] | None:
        """A file's size and modification time, read once per assembly (files are shared)."""
        if path not in self._stamps:
            self._stamps[path] = _stamp(path)
        return self._stamps[path]

    def trusted(self, source: PluginSource, key: str | None, tools: Sequence[Tool]) -> bool:
        """Whether an entry with ``key`` holds; if so, ``tools`` get their cached schemas.

        The key digests the tools' fingerprints in order, so a matching entry holds one
        schema per tool, in the same order. They are kept as one JSON text a plugin and
        parsed when one of its tools is first shown: a warm start parses none of them.
        """
        if key is None:
            return False
        entry = self._load().get(_name(source))
        if entry is None or entry.get("key") != key:
            return False
        text = entry.get("schemas")
        if not isinstance(text, str):
            return False
        schemas = _Schemas(text)
        for index, tool in enumerate(tools):
            prime_schema(tool, functools.partial(schemas.get, index))
        return True

    def store(self, source: PluginSource, key: str | None, tools: Sequence[Tool]) -> None:
        """Remember that this plugin passed its checks, with its tools' schemas."""
        if key is None:
            return
        schemas = json.dumps([t.parameters for t in tools], separators=(",", ":"))
        self._load()[_name(source)] = {"key": key, "schemas": schemas}
        self._changed = True

    def deferred(self, source: PluginSource) -> tuple[dict[str, Any], Callable[[int], Any]] | None:
        """The deferral record kept for this plugin, if every file it names is unchanged.

        Returns the record (see :func:`~oracle_core.plugins.deferred.deferral_record`) and
        a reader of its tools' cached schemas by index; ``None`` when there is no record,
        the distribution's version or entry point differs, or any file's stamp changed.
        The caller still compares the configuration's digest.
        """
        entry = self._load().get(_name(source))
        if entry is None:
            return None
        record = entry.get("deferred")
        text = entry.get("schemas")
        if not isinstance(record, dict) or not isinstance(text, str):
            return None
        if record.get("version") != source.version or record.get("value") != source.value:
            return None
        files = record.get("files")
        if not isinstance(files, list) or not files:
            return None
        for item in files:
            if not isinstance(item, list) or not item or not isinstance(item[0], str):
                return None
            stamp = self._stamp(item[0])
            if stamp is None or list(stamp) != item:
                return None
        return record, _Schemas(text).get

    def keep_deferred(
        self, source: PluginSource, record: dict[str, Any] | None, modules: Iterable[str]
    ) -> None:
        """Keep (or, with ``None``, drop) the deferral record of a plugin stored or trusted now.

        The record is keyed by the stamps of the files :meth:`key` stamped for it in this
        assembly (the distribution's ``RECORD`` and the plugin's sources) and of
        ``modules``, the files of the modules its import loaded. Nothing is kept for a
        plugin without a cache entry or not keyed now, or whose files cannot all be read.
        """
        entry = self._load().get(_name(source))
        keyed = self._keyed.get(_name(source))
        if entry is None or keyed is None:
            return
        if record is not None:
            stamps = [self._stamp(p) for p in sorted({*keyed, *modules})]
            if None in stamps:
                record = None
            else:
                record = {
                    **record,
                    "version": source.version,
                    "value": source.value,
                    "files": [list(s) for s in stamps if s is not None],
                }
        if entry.get("deferred") != record:
            if record is None:
                entry.pop("deferred", None)
            else:
                entry["deferred"] = record
            self._changed = True

    def save(self) -> None:
        """Write the cache if anything was stored (atomically: readers never see half)."""
        if not self._changed or self._entries is None:
            return
        data = {"format": CACHE_FORMAT, "plugins": self._entries}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, scratch = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(data, out, separators=(",", ":"))
            os.replace(scratch, self.path)
            for stale in self.path.parent.glob("plugins-*.json"):
                if stale != self.path:  # another format or version: never read again
                    stale.unlink(missing_ok=True)
        except OSError as error:
            log.debug("start-up cache %s not written: %s", self.path, error)
            return
        self._changed = False

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._entries is None:
            self._entries = _read(self.path)
        return self._entries


class _Schemas:
    """One plugin's cached tool schemas: a JSON list parsed on first need, then kept."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._parsed: list[Any] | None = None

    def get(self, index: int) -> Any:
        """The schema of the plugin's ``index``-th tool (``None`` when the entry has none).

        Raises:
            ValueError: when the text is not JSON (the tool then builds its schema).
        """
        if self._parsed is None:
            parsed = json.loads(self._text)
            self._parsed = parsed if isinstance(parsed, list) else []
        return self._parsed[index] if index < len(self._parsed) else None


def _read(path: Path) -> dict[str, dict[str, Any]]:
    """The entries of the cache file; an unreadable or misshapen file counts as empty."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
        return {}
    plugins = data.get("plugins")
    if not isinstance(plugins, dict):
        return {}
    return {name: entry for name, entry in plugins.items() if isinstance(entry, dict)}


def _name(source: PluginSource) -> str:
    return f"{normalize(source.distribution or '')}:{source.name}"


def _stamp(path: str) -> tuple[str, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (path, info.st_size, info.st_mtime_ns)


def _source_files(obj: object, tools: Sequence[Tool]) -> set[str]:
    """The files defining the plugin object, its tool functions and their hints' classes."""
    modules: set[object] = {obj.__name__ if isinstance(obj, ModuleType) else type(obj).__module__}
    for tool in tools:
        modules.add(getattr(tool.function, "__module__", None))
        modules.update(cls.__module__ for cls in hint_classes(tool))
    files: set[str] = set()
    for name in modules:
        module = sys.modules.get(name) if isinstance(name, str) else None
        file = getattr(module, "__file__", None)
        if isinstance(file, str):
            files.add(file)
    return files
