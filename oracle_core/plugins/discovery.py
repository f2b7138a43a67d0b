"""Finding plugins: entry points of the ``oracle.plugins`` group, and selection by env."""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import machinery, metadata
from pathlib import Path
from typing import Any

ENTRY_POINT_GROUP = "oracle.plugins"


@dataclass(frozen=True)
class PluginSource:
    """Where a plugin comes from.

    Attributes:
        name: the entry point name (or, for a plugin given in code, the object's name).
        distribution: the distribution that ships it (``None`` for a plugin given in code).
        version: that distribution's version.
        value: the entry point's target, ``module`` or ``module:attribute``.
        entry_point: the entry point itself (``None`` for a plugin given in code).
        metadata_path: the distribution's ``RECORD`` (else ``METADATA``) file, whose
            stamp tells the start-up cache whether it was reinstalled.
    """

    name: str
    distribution: str | None = None
    version: str | None = None
    value: str = ""
    entry_point: metadata.EntryPoint | None = field(default=None, repr=False)
    metadata_path: str | None = field(default=None, repr=False)

    def load(self) -> Any:
        """Import the plugin object (a module or any object with hook implementations)."""
        if self.entry_point is None:
            raise RuntimeError(f"plugin {self.name!r} has no entry point to load")
        return self.entry_point.load()

    def names(self) -> set[str]:
        """The names that select this plugin, normalized: entry point and distribution."""
        names = {normalize(self.name)}
        if self.distribution is not None:
            names.add(normalize(self.distribution))
        return names

    def matches(self, names: Iterable[str]) -> bool:
        """Whether any of ``names`` is this plugin's entry point or distribution name."""
        return not self.names().isdisjoint(normalize(n) for n in names)


def normalize(name: str) -> str:
    """Compare plugin and distribution names the way pip does: case and ``-_.`` folded."""
    return name.strip().lower().replace("-", "_").replace(".", "_")


def find_entry_points(path: Sequence[str] | None = None) -> list[PluginSource]:
    """Every ``oracle.plugins`` entry point of the installed distributions.

    Sorted by distribution then entry point name, so registration order does not depend on
    the order of ``sys.path``; a distribution found twice on the path counts once (the
    first on the path wins).

    Only ``entry_points.txt`` is read for every distribution; the name and version are
    read from the ``METADATA`` headers of those that have an oracle plugin. (Reading each
    distribution's whole ``METADATA`` first cost tens of milliseconds a command.) When
    every folder on the path is a plain folder and only the standard path finder reports
    distributions (the usual case), the metadata folders are listed and read directly,
    in the order :mod:`importlib.metadata` finds them, without its objects (a tenth of a
    millisecond a distribution, half a second at thousands of plugins).

    Args:
        path: folders to search instead of ``sys.path``.
    """
    found: dict[tuple[str, str], PluginSource] = {}
    dirs = list(path) if path is not None else list(sys.path)
    folders = _metadata_folders(dirs) if only_path_finder() else None
    if folders is None:
        for dist in metadata.distributions(path=dirs):
            _add(found, dist.read_text, getattr(dist, "_path", None))
    else:
        for folder in folders:
            _add(found, functools.partial(_read_text, folder), folder)
    return [found[key] for key in sorted(found)]


def _add(
    found: dict[tuple[str, str], PluginSource],
    read: Callable[[str], str | None],
    folder: Any,
) -> None:
    """Add the oracle plugins of the distribution whose metadata ``read`` reads (its
    metadata folder is ``folder``, ``None`` when it has none) to ``found``, keeping the
    first found for each name."""
    text = read("entry_points.txt")
    if not text or f"[{ENTRY_POINT_GROUP}]" not in text:
        return
    points = group_entry_points(text, ENTRY_POINT_GROUP)
    if not points:
        return
    name, version = _name_and_version(read("METADATA") or read("PKG-INFO") or "")
    for entry_point in points:
        found.setdefault(
            (normalize(name), entry_point.name),
            PluginSource(
                name=entry_point.name,
                distribution=name,
                version=version,
                value=entry_point.value,
                entry_point=entry_point,
                metadata_path=_metadata_file(folder),
            ),
        )


def only_path_finder() -> bool:
    """Whether the standard path finder is the only one that reports distributions."""
    return all(
        finder is machinery.PathFinder or not hasattr(finder, "find_distributions")
        for finder in sys.meta_path
    )


def _metadata_folders(dirs: Sequence[str]) -> list[str] | None:
    """The ``.dist-info`` and ``.egg-info`` entries of the folders ``dirs``, in the order
    :mod:`importlib.metadata` yields their distributions (folder by folder; in a folder,
    grouped by normalized name in order of first appearance); ``None`` when a path entry
    is a file (a zip) or an ``.egg``, which only :mod:`importlib.metadata` reads."""
    found: list[str] = []
    for root in dirs:
        if os.path.basename(root).lower().endswith(".egg"):
            return None
        try:
            children = os.listdir(root or ".")
        except NotADirectoryError:
            return None
        except OSError:
            continue  # absent or unreadable: importlib.metadata finds nothing there either
        groups: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                name = _NAME_SEPARATORS.sub("_", low.rpartition(".")[0].partition("-")[0])
                groups.setdefault(name, []).append(child)
        found += [str(Path(root, child)) for group in groups.values() for child in group]
    return found


_NAME_SEPARATORS = re.compile(r"[-_.]+")
"""Runs of the characters a distribution's name normalizes to ``_`` (as importlib's)."""


def _read_text(folder: str, name: str) -> str | None:
    """A metadata file's text, as ``importlib.metadata``'s ``read_text`` gives it (``None``
    when the file is absent or unreadable)."""
    try:
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            return handle.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None


def group_entry_points(text: str, group: str) -> list[metadata.EntryPoint]:
    """The entry points of ``group`` in the text of an ``entry_points.txt``.

    Read as :mod:`importlib.metadata` reads the file (lines stripped, blank lines and ``#``
    comments skipped, ``[section]`` headers, ``name = value`` split at the first ``=``),
    from the text already read instead of reading and parsing the whole file again.
    """
    found: list[metadata.EntryPoint] = []
    section: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section == group:
            name, _, value = line.partition("=")
            found.append(metadata.EntryPoint(name.strip(), value.strip(), group))
    return found


def _name_and_version(text: str) -> tuple[str, str | None]:
    """``Name`` and ``Version`` from the headers of a ``METADATA`` text, not its long body."""
    headers: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line; the description follows
        key, _, value = line.partition(":")
        if key in ("Name", "Version") and key not in headers:
            headers[key] = value.strip()
    return headers.get("Name") or "unknown", headers.get("Version")


def _metadata_file(folder: Any) -> str | None:
    """The distribution's ``RECORD`` (rewritten by every install), else its ``METADATA``."""
    if folder is None:
        return None
    for name in ("RECORD", "METADATA", "PKG-INFO"):
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate):
            return candidate
    return None


def select(
    sources: Sequence[PluginSource],
    load: Sequence[str] | None,
    disable: Sequence[str],
) -> tuple[list[PluginSource], list[str]]:
    """Apply ``ORACLE_LOAD_PLUGINS`` and ``ORACLE_DISABLE_PLUGINS`` before anything is imported.

    Returns:
        The sources to load, and the names in ``load`` that match no installed plugin.
    """
    wanted = {normalize(n) for n in load} if load is not None else None
    blocked = {normalize(n) for n in disable}
    chosen = []
    known: set[str] = set()
    for source in sources:
        names = source.names()  # normalized once: thousands of plugins
        known |= names
        if (wanted is None or not wanted.isdisjoint(names)) and blocked.isdisjoint(names):
            chosen.append(source)
    missing = [n for n in (load or ()) if normalize(n) not in known]
    return chosen, missing


def unmatched(sources: Sequence[PluginSource], names: Sequence[str]) -> list[str]:
    """The names in ``names`` that are no entry point or distribution name of ``sources``."""
    known = {n for source in sources for n in source.names()}
    return [name for name in names if normalize(name) not in known]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'weather'?)`` for the known name nearest to ``name``; ``""`` if none
    is near enough (``difflib``, as the ``oracle.toml`` checks suggest)."""
    from oracle_core.settings.unknown import closest

    choices = {normalize(k): k for k in known}
    found = closest(normalize(name), list(choices))
    return f" (did you mean {choices[found]!r}?)" if found is not None else ""
