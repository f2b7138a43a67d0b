"""The installed plugins' entry points, scanned once and kept while nothing installed changed.

:func:`~oracle_core.plugins.discovery.find_entry_points` reads every distribution's
``entry_points.txt`` on the path (and the ``METADATA`` of those with a plugin): some
tens of microseconds a distribution, a tenth of a second or more a start with thousands
of plugins installed. :func:`installed_plugins` keeps what the scan found in
``$ORACLE_HOME/cache/entry-points-<digest>.json`` and trusts it while the path is in the
same state, which it reads without opening a file:

- the same folders on the path, each listing the same ``.dist-info``, ``.egg-info`` and
  ``.egg`` entries (an install or an uninstall adds or removes one: :mod:`importlib.metadata`
  itself relies on the folder to see them);
- the same size and modification time of each such entry's ``entry_points.txt`` (or of the
  entry itself when it is a file), so an entry point edited in place is seen too;
- for each plugin found, the same size and modification time of its distribution's
  ``RECORD`` (else ``METADATA``), which a reinstall of the same version rewrites.

Anything else, or a finder on ``sys.meta_path`` other than the standard path finder that
could report distributions, scans as before (and a scan's result is kept for next time).
A cache that cannot be read or written is ignored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from oracle_core.plugins.discovery import (
    ENTRY_POINT_GROUP,
    PluginSource,
    find_entry_points,
    only_path_finder,
)
from oracle_core.values.files import remove_others, replace_text

__all__ = ["installed_plugins", "path_state"]

log = logging.getLogger("oracle_core.plugins")

SCAN_FORMAT = 1
"""Raised whenever what the file means changes: old files are then never read."""

_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg")


def installed_plugins(path: Sequence[str] | None, folder: Path | None) -> list[PluginSource]:
    """What :func:`~oracle_core.plugins.discovery.find_entry_points` finds on ``path``
    (``sys.path`` when ``None``), read from the cache in ``folder`` while the path's state
    is unchanged (see the module's rules); ``folder=None`` always scans."""
    dirs = list(path) if path is not None else list(sys.path)
    state = path_state(dirs) if folder is not None and only_path_finder() else None
    if state is None or folder is None:
        return find_entry_points(path)
    file = folder / f"entry-points-{_file_digest()}.json"
    cached = _read(file, state)
    if cached is not None:
        return cached
    sources = find_entry_points(path)
    _write(file, state, sources)
    return sources


def path_state(dirs: Sequence[str]) -> str | None:
    """A digest of what the folders ``dirs`` hold that tells installed distributions
    apart (see the module's rules), or ``None`` when it cannot be read."""
    parts: list[Any] = []
    for entry in dirs:
        folder = entry or "."
        try:
            with os.scandir(folder) as listing:
                found = sorted(
                    (item.name, item.path, item.is_dir())
                    for item in listing
                    if item.name.lower().endswith(_METADATA_SUFFIXES)
                )
        except NotADirectoryError:
            parts.append([entry, _stamp(folder)])  # a zip file on the path
            continue
        except OSError:
            parts.append([entry, None])  # absent now: present later changes the digest
            continue
        stamps = []
        for name, full, is_dir in found:
            target = os.path.join(full, "entry_points.txt") if is_dir else full
            stamps.append([name, _stamp(target)])
        parts.append([entry, stamps])
    text = json.dumps(parts, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _stamp(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


def _file_digest() -> str:
    text = f"{SCAN_FORMAT}|{sys.version_info[:2]}|{ENTRY_POINT_GROUP}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read(file: Path, state: str) -> list[PluginSource] | None:
    """The sources kept in ``file`` for ``state``, or ``None`` (absent, another state, a
    changed ``RECORD``, or not of the expected shape)."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        if data.get("format") != SCAN_FORMAT or data.get("state") != state:
            return None
        sources = []
        for name, distribution, version, value, record, stamp in data["sources"]:
            if record is not None and _stamp(record) != stamp:
                return None
            sources.append(
                PluginSource(
                    name=name,
                    distribution=distribution,
                    version=version,
                    value=value,
                    entry_point=metadata.EntryPoint(name, value, ENTRY_POINT_GROUP),
                    metadata_path=record,
                )
            )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return sources


def _write(file: Path, state: str, sources: Sequence[PluginSource]) -> None:
    """Keep ``sources`` for ``state`` (atomically; a file that cannot be written is left)."""
    rows = [
        [s.name, s.distribution, s.version, s.value, s.metadata_path,
         _stamp(s.metadata_path) if s.metadata_path is not None else None]
        for s in sources
    ]  # fmt: skip
    data = {"format": SCAN_FORMAT, "state": state, "sources": rows}
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        replace_text(file, json.dumps(data, separators=(",", ":")))
        remove_others(file, "entry-points-*.json")  # another format or Python
    except OSError as error:
        log.debug("entry point cache %s not written: %s", file, error)
