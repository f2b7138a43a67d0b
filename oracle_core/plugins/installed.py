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
A cache that cannot be written is left alone.

The file is checked, not trusted (anyone who can write ``$ORACLE_HOME/cache`` can edit
it): it is read only as a regular file within :data:`MAX_SCAN_BYTES` and a JSON depth
bound (:mod:`~oracle_core.plugins.cache_read`), each row must have the types written, and
must be what its distribution declares (:func:`_check_declared`) before anything imports
it. A file that fails is rescanned and rewritten with one warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from oracle_core.plugins.cache_read import CacheFileError, loads_bounded, read_regular
from oracle_core.plugins.discovery import (
    ENTRY_POINT_GROUP,
    PluginSource,
    find_entry_points,
    group_entry_points,
    only_path_finder,
)
from oracle_core.values.files import remove_others, replace_text

__all__ = ["installed_plugins", "path_state"]

log = logging.getLogger("oracle_core.plugins")

SCAN_FORMAT = 1
"""Raised whenever what the file means changes: old files are then never read."""

_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg")

MAX_SCAN_BYTES = 64 * 1024 * 1024
"""A cache of entry points larger than this is not read (a few hundred bytes a plugin)."""

_NAME_RUNS = re.compile(r"[-_.]+")


def installed_plugins(path: Sequence[str] | None, folder: Path | None) -> list[PluginSource]:
    """What :func:`~oracle_core.plugins.discovery.find_entry_points` finds on ``path``
    (``sys.path`` when ``None``), read from the cache in ``folder`` while the path's state
    is unchanged (see the module's rules); ``folder=None`` always scans."""
    dirs = list(path) if path is not None else list(sys.path)
    scanned = _scan(dirs) if folder is not None and only_path_finder() else None
    if scanned is None or folder is None:
        return find_entry_points(path)
    state, infos = scanned
    file = folder / f"entry-points-{_file_digest()}.json"
    try:
        cached = _read(file, state, infos)
    except CacheFileError as error:
        log.warning(
            "the entry point cache %s was not trusted (%s): rebuilt it from the installed "
            "distributions",
            file,
            error,
        )
        cached = None
    if cached is not None:
        return cached
    sources = find_entry_points(path)
    _write(file, state, sources, infos)
    return sources


def path_state(dirs: Sequence[str]) -> str | None:
    """A digest of what the folders ``dirs`` hold that tells installed distributions
    apart (see the module's rules), or ``None`` when it cannot be read."""
    scanned = _scan(dirs)
    return scanned[0] if scanned is not None else None


def _scan(dirs: Sequence[str]) -> tuple[str, set[str]] | None:
    """:func:`path_state`, and the metadata entries (paths) it found in the folders."""
    parts: list[Any] = []
    infos: set[str] = set()
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
            if is_dir:
                infos.add(os.path.normpath(full))  # as the scan's Path(root, child) spells it
        parts.append([entry, stamps])
    text = json.dumps(parts, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest(), infos


def _stamp(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


def _file_digest() -> str:
    text = f"{SCAN_FORMAT}|{sys.version_info[:2]}|{ENTRY_POINT_GROUP}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read(file: Path, state: str, infos: set[str]) -> list[PluginSource] | None:
    """The sources kept in ``file`` for ``state``, or ``None`` (absent, another format or
    state, or a changed ``RECORD``: the path changed, so a scan is due).

    ``infos`` are the metadata folders on the path now: each row must name one of them,
    and be an entry point of its ``entry_points.txt`` (:func:`_check_declared`).

    Raises:
        CacheFileError: the file is not what :func:`_write` writes (not a regular file,
            too large or too deep, not of the expected shape), or a row is not what its
            distribution declares: the file is then rebuilt.
    """
    raw = read_regular(file, MAX_SCAN_BYTES)
    if raw is None:
        return None
    data = loads_bounded(raw)
    if not isinstance(data, dict) or data.get("format") != SCAN_FORMAT:
        if isinstance(data, dict) and isinstance(data.get("format"), int):
            return None  # another format: written by another version, not corrupt
        raise CacheFileError("not a cache of entry points")
    if data.get("state") != state:
        return None
    rows = data.get("sources")
    if not isinstance(rows, list):
        raise CacheFileError("no list of sources")
    sources = []
    declared: dict[str, dict[str, str]] = {}
    for row in rows:
        name, distribution, version, value, record, stamp = _row(row)
        if _stamp(_check_declared(declared, infos, name, distribution, value, record)) != stamp:
            return None  # reinstalled: scanned again
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
    return sources


def _row(row: Any) -> tuple[str, str, str | None, str, str | None, list[int] | None]:
    """A row of the file, its types checked (:func:`_write` writes six fields)."""
    if not isinstance(row, list) or len(row) != 6:
        raise CacheFileError("a source is not a row of six fields")
    name, distribution, version, value, record, stamp = row
    if not (
        isinstance(name, str)
        and isinstance(distribution, str)
        and isinstance(version, str | None)
        and isinstance(value, str)
        and isinstance(record, str | None)
        and (
            stamp is None
            or (isinstance(stamp, list) and len(stamp) == 2 and all(type(n) is int for n in stamp))
        )
    ):
        raise CacheFileError(f"the row of entry point {name!r} has a field of the wrong type")
    return name, distribution, version, value, record, stamp


def _check_declared(
    declared: dict[str, dict[str, str]],
    infos: set[str],
    name: str,
    distribution: str,
    value: str,
    record: str | None,
) -> str:
    """Refuse a row its distribution does not declare, before anything imports its value;
    return its ``record``.

    The row's ``record`` must be the ``RECORD`` (or ``METADATA``, ``PKG-INFO``) of a
    metadata folder on the path now, named for ``distribution``, whose own
    ``entry_points.txt`` (read through :mod:`importlib.metadata`, once per distribution
    with a plugin) maps ``name`` to ``value`` in the ``oracle.plugins`` group (the first
    such line, as a scan keeps).

    Raises:
        CacheFileError: it does not.
    """
    where = f"entry point {name!r} of {distribution!r}"
    problem = _folder_problem(infos, distribution, record)
    if problem is not None or record is None:
        raise CacheFileError(f"{where} {problem}")
    info = os.path.dirname(os.path.normpath(record))
    points = declared.get(info)
    if points is None:
        text = metadata.PathDistribution(Path(info)).read_text("entry_points.txt") or ""
        points = {}
        for point in group_entry_points(text, ENTRY_POINT_GROUP):
            points.setdefault(point.name, point.value)
        declared[info] = points
    if points.get(name) != value:
        raise CacheFileError(f"{where} is not what its entry_points.txt declares")
    return record


def _folder_problem(infos: set[str], distribution: str, record: str | None) -> str | None:
    """What is wrong with ``record`` as the metadata file of ``distribution``, or ``None``:
    it must be the ``RECORD`` (``METADATA``, ``PKG-INFO``) of one of the metadata folders
    ``infos``, a folder named for the distribution."""
    if record is None:
        return "names no metadata folder to check it against"
    info, file = os.path.split(os.path.normpath(record))
    if info not in infos or file not in ("RECORD", "METADATA", "PKG-INFO"):
        return "names a file outside the distributions on the path"
    folder = os.path.basename(info).lower().rpartition(".")[0].partition("-")[0]
    if _NAME_RUNS.sub("_", folder) != _NAME_RUNS.sub("_", distribution.lower()):
        return "is in the metadata folder of another distribution"
    return None


def _write(file: Path, state: str, sources: Sequence[PluginSource], infos: set[str]) -> None:
    """Keep ``sources`` for ``state`` (atomically; a file that cannot be written is left).

    Nothing is kept when a source could not be checked against its distribution when read
    (one found by :mod:`importlib.metadata` outside a metadata folder, such as in an
    ``.egg`` or a zip file): such a path is scanned at every start.
    """
    if any(_folder_problem(infos, s.distribution or "", s.metadata_path) for s in sources):
        return
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
