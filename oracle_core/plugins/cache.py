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

The file is one JSON document written one plugin a line
(:mod:`~oracle_core.plugins.cache_file`), so a start reads each line's text and parses a
plugin's entry only when that plugin asks for it: the parsed entries of a large catalog
(several KB a plugin) are never all alive at once, and none outlive the assembly (a
deferred plugin keeps only its own key and schemas, for its first use). A file of the same
format written otherwise (by hand, or by a test) is still read, whole.

The file's name digests the cache format and the versions of oracle-core, pydantic and
Python, so an upgrade of any starts a new file. Plugins given in code have no
distribution and are never cached. A file that cannot be written is left alone.

The file is checked, not trusted: it is read only as a regular file within a size and a
depth bound (:mod:`~oracle_core.plugins.cache_read`), and a deferral record only when it
holds what a deferrable plugin may give (:mod:`~oracle_core.plugins.cache_records`). A file
or entry that fails is ignored and rewritten with one warning an assembly, never fatal.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import operator
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import pydantic

from oracle_core.authoring.manifest import PluginManifest
from oracle_core.authoring.tools.tool import (
    Tool,
    prime_schema,
    schema_stored,
    tool_fingerprint,
)
from oracle_core.plugins.cache_file import (
    CACHE_FORMAT,
    MAX_CACHE_BYTES,
    Span,
    read_entries,
    split_line,
    write_lines,
)
from oracle_core.plugins.cache_read import CacheFileError, loads_bounded, open_regular
from oracle_core.plugins.cache_records import check_record
from oracle_core.plugins.discovery import PluginSource, normalize
from oracle_core.plugins.stamps import source_files, stamp
from oracle_core.values.files import remove_others, replacing

log = logging.getLogger("oracle_core.plugins")


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
        self._entries: dict[str, Span | dict[str, Any]] | None = None
        """Each plugin's entry: where its text is in the file as read, or the parsed entry
        once changed."""
        self._file: BinaryIO | None = None
        """The file as read, open until :meth:`release` (another start may replace it)."""
        self._changed = False
        self._read_only = False
        self._sources: dict[str, CachedSchemas] = {}
        """The schema sources :meth:`deferred` handed out in this assembly."""
        self._last: tuple[str, dict[str, Any]] | None = None
        """The entry parsed last (:meth:`key` then :meth:`keep_deferred` ask for one)."""
        self._prints: tuple[tuple[Tool, ...], list[str]] = ((), [])
        self._stamps: dict[str, tuple[str, int, int] | None] = {}
        self._keyed: dict[str, list[str]] = {}
        self._warned = False

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
        sources = source_files(obj, tools)
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
            self._stamps[path] = stamp(path)
        return self._stamps[path]

    def trusted(self, source: PluginSource, key: str | None, tools: Sequence[Tool]) -> bool:
        """Whether an entry with ``key`` holds; if so, ``tools`` get their cached schemas.

        The key digests the tools' fingerprints in order, so a matching entry holds one
        schema per tool, in the same order. They are kept as one JSON text a plugin and
        parsed when one of its tools is first shown: a warm start parses none of them.
        """
        if key is None:
            return False
        entry = self._entry(_name(source))
        if entry is None or entry.get("key") != key:
            return False
        text = entry.get("schemas")
        if not isinstance(text, str):
            return False
        schemas = CachedSchemas(self.path, _name(source), key, text=text)
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
        kept = CachedSchemas(self.path, _name(source), key, text=schemas)
        for index, tool in enumerate(tools):  # read back from the text when next shown
            schema_stored(tool, functools.partial(kept.get, index))

    def deferred(self, source: PluginSource) -> tuple[dict[str, Any], CachedSchemas] | None:
        """The deferral record kept for this plugin, if every file it names is unchanged.

        Returns the record (see :func:`~oracle_core.plugins.deferred.deferral_record`) and
        where its tools' cached schemas are (read on first need); ``None`` when there is
        no record, the distribution's version or entry point differs, or any file's stamp
        changed. The caller still compares the configuration's digest.
        """
        name = _name(source)
        entry = self._entry(name)
        if entry is None:
            return None
        record = entry.get("deferred")
        if record is None:
            return None  # not deferrable: imported at every start
        text = entry.get("schemas")
        key = entry.get("key")
        if not isinstance(record, dict) or not isinstance(text, str) or not isinstance(key, str):
            self._distrust(f"the entry of {name} is misshapen")
            return None
        if record.get("version") != source.version or record.get("value") != source.value:
            return None
        files = record.get("files")
        if not isinstance(files, list) or not files:
            self._distrust(f"the deferral record of {name} names no files")
            return None
        for item in files:
            if not isinstance(item, list) or not item or not isinstance(item[0], str):
                self._distrust(f"the deferral record of {name} names a file misshapen")
                return None
            stamp = self._stamp(item[0])
            if stamp is None or list(stamp) != item:
                return None  # the plugin changed since: built again, no warning
        try:  # what the record says the plugin gives must be what a plugin may give
            record = {**record, "manifest": check_record(record)}
        except CacheFileError as error:
            self._distrust(f"the deferral record of {name}: {error}")
            return None
        span = self._load().get(name)
        if not isinstance(span, Span):  # a file not written one plugin a line: keep the text
            return record, CachedSchemas(self.path, name, key, text=text)
        found = CachedSchemas(self.path, name, key, offset=span.at)
        self._sources[name] = found  # moved if this assembly rewrites the file
        return record, found

    def _distrust(self, reason: str) -> None:
        """Note that what the file holds is not what the oracle writes: it is rebuilt at
        :meth:`save` (one warning an assembly, whatever else is found)."""
        self._changed = True
        if self._warned or self._read_only:
            log.debug("start-up cache %s: %s", self.path, reason)
            return
        self._warned = True
        log.warning(
            "the start-up cache %s was not trusted (%s): the plugins it described are "
            "checked again and the file rebuilt",
            self.path,
            reason,
        )

    def release(self) -> None:
        """Forget what was read and stamped (it is read again if asked): call it once the
        assembly is done and saved, so the entries do not outlive it."""
        if self._read_only:
            return
        if self._file is not None:
            self._file.close()
            self._file = None
        self._entries = None
        self._stamps = {}
        self._keyed = {}
        self._prints = ((), [])
        self._last = None
        self._sources = {}

    def keep_deferred(
        self, source: PluginSource, record: dict[str, Any] | None, modules: Iterable[str]
    ) -> None:
        """Keep (or, with ``None``, drop) the deferral record of a plugin stored or trusted now.

        The record is keyed by the stamps of the files :meth:`key` stamped for it in this
        assembly (the distribution's ``RECORD`` and the plugin's sources) and of
        ``modules``, the files of the modules its import loaded. Nothing is kept for a
        plugin without a cache entry or not keyed now, or whose files cannot all be read.
        """
        keyed = self._keyed.get(_name(source))
        entry = self._entry(_name(source), keep=True) if keyed is not None else None
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
        if not self._changed or self._entries is None or self._read_only:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with replacing(self.path, binary=True) as out:
                offsets = write_lines(out, self._entries, self._text)
                if self._file is not None:  # closed before the replace (Windows)
                    self._file.close()
                    self._file = None
                    self._entries = self._last = None
            for name, found in self._sources.items():  # the lines they point to moved
                found.offset = offsets.get(name, -1)
            remove_others(self.path, "plugins-*.json")  # another format or version
        except OSError as error:
            log.debug("start-up cache %s not written: %s", self.path, error)
            return
        self._changed = False

    def _load(self) -> dict[str, Span | dict[str, Any]]:
        if self._entries is None:
            try:
                self._entries, self._file = read_entries(self.path)
            except CacheFileError as error:
                self._entries, self._file = {}, None
                self._distrust(str(error))
        return self._entries

    def _text(self, span: Span) -> bytes:
        """The JSON text of an entry of the file as read."""
        assert self._file is not None
        self._file.seek(span.at + span.skip)
        return self._file.read(span.length)

    def _entry(self, name: str, keep: bool = False) -> dict[str, Any] | None:
        """The entry of plugin ``name``, parsed from its text (``keep``: kept parsed, to be
        changed in place; else parsed again when asked again)."""
        entries = self._load()
        entry = entries.get(name)
        if isinstance(entry, Span) and self._last is not None and self._last[0] == name:
            entry = self._last[1]
        elif isinstance(entry, Span):
            try:
                parsed = loads_bounded(self._text(entry))
            except (OSError, CacheFileError):
                parsed = None
            if not isinstance(parsed, dict):
                del entries[name]  # misshapen: as if absent (rewritten at save)
                self._distrust(f"the entry of {name} is not a JSON object within bounds")
                return None
            entry = parsed
            self._last = (name, entry)
        if keep and entry is not None:
            entries[name] = entry
        return entry


class CachedSchemas:
    """A deferred plugin's cached tool schemas, read from the cache file on first need.

    Only the place of its line in the file is kept (the schemas of thousands of plugins
    would otherwise stay in memory for nothing): when a tool is first shown, the line is
    read again and used if it is still this plugin's entry with the same key. Another
    start may have rewritten the file meanwhile; then nothing cached is trusted and the
    plugin's own tools give the schemas (its import happens then).

    Args:
        path: the cache file.
        name: the plugin's entry name.
        key: its entry's key, as trusted at start.
        offset: where its line starts (bytes); ``text``: its schemas' JSON text instead.
    """

    __slots__ = ("_parsed", "_text", "key", "name", "offset", "path")

    def __init__(
        self, path: Path, name: str, key: str, *, offset: int = -1, text: str | None = None
    ) -> None:
        self.path = path
        self.name = name
        self.key = key
        self.offset = offset
        self._text = text
        self._parsed: list[Any] | None = None

    def entry(self) -> dict[str, Any] | None:
        """The plugin's entry (key and schemas) if the file still holds it unchanged."""
        if self._text is not None:
            return {"key": self.key, "schemas": self._text}
        if self.offset < 0:
            return None
        try:
            handle = open_regular(self.path, MAX_CACHE_BYTES)
            if handle is None:
                return None
            with handle:
                handle.seek(self.offset)
                line = handle.readline().decode("utf-8")
            name, text = split_line(line)
            if name != self.name:
                return None
            entry = loads_bounded(text)
        except (OSError, ValueError, IndexError):  # CacheFileError is a ValueError
            return None
        if not isinstance(entry, dict) or entry.get("key") != self.key:
            return None
        return {"key": self.key, "schemas": entry.get("schemas")}

    def get(self, index: int) -> Any:
        """The schema of the plugin's ``index``-th tool (``None`` when the entry has none).

        Raises:
            ValueError: when the entry changed or its text is not JSON (the tool then
                takes its schema from the plugin itself).
        """
        if self._parsed is None:
            entry = self.entry()
            text = entry.get("schemas") if entry is not None else None
            if not isinstance(text, str):
                raise ValueError(f"the cached schemas of {self.name} changed")
            parsed = loads_bounded(text)
            if not isinstance(parsed, list) or not all(isinstance(s, dict) for s in parsed):
                raise ValueError(f"the cached schemas of {self.name} are not JSON schemas")
            self._parsed = parsed
        return self._parsed[index] if index < len(self._parsed) else None

    def cache(self) -> StartupCache:
        """A read-only cache holding only this plugin's entry, for its import on first use
        (which then trusts the cached schemas, as a start would)."""
        narrow = StartupCache(self.path.parent)
        narrow.path = self.path
        narrow._read_only = True
        entry = self.entry()
        narrow._entries = {self.name: entry} if entry is not None else {}
        return narrow


def _name(source: PluginSource) -> str:
    return f"{normalize(source.distribution or '')}:{source.name}"
