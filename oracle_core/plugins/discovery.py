"""Finding plugins: entry points of the ``oracle.plugins`` group, and selection by env."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
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
    """

    name: str
    distribution: str | None = None
    version: str | None = None
    value: str = ""
    entry_point: metadata.EntryPoint | None = None

    def load(self) -> Any:
        """Import the plugin object (a module or any object with hook implementations)."""
        if self.entry_point is None:
            raise RuntimeError(f"plugin {self.name!r} has no entry point to load")
        return self.entry_point.load()

    def matches(self, names: Iterable[str]) -> bool:
        """Whether any of ``names`` is this plugin's entry point or distribution name."""
        wanted = {normalize(n) for n in names}
        return normalize(self.name) in wanted or (
            self.distribution is not None and normalize(self.distribution) in wanted
        )


def normalize(name: str) -> str:
    """Compare plugin and distribution names the way pip does: case and ``-_.`` folded."""
    return name.strip().lower().replace("-", "_").replace(".", "_")


def find_entry_points(path: Sequence[str] | None = None) -> list[PluginSource]:
    """Every ``oracle.plugins`` entry point of the installed distributions.

    Sorted by distribution then entry point name, so registration order does not depend on
    the order of ``sys.path``; a distribution found twice on the path counts once.

    Args:
        path: folders to search instead of ``sys.path``.
    """
    found: dict[tuple[str, str], PluginSource] = {}
    distributions = (
        metadata.distributions(path=list(path)) if path is not None else metadata.distributions()
    )
    for dist in distributions:
        dist_name = dist.metadata["Name"] or "unknown"
        for entry_point in dist.entry_points:
            if entry_point.group != ENTRY_POINT_GROUP:
                continue
            key = (normalize(dist_name), entry_point.name)
            found.setdefault(
                key,
                PluginSource(
                    name=entry_point.name,
                    distribution=dist_name,
                    version=dist.version,
                    value=entry_point.value,
                    entry_point=entry_point,
                ),
            )
    return [found[key] for key in sorted(found)]


def select(
    sources: Sequence[PluginSource],
    load: Sequence[str] | None,
    disable: Sequence[str],
) -> tuple[list[PluginSource], list[str]]:
    """Apply ``ORACLE_LOAD_PLUGINS`` and ``ORACLE_DISABLE_PLUGINS`` before anything is imported.

    Returns:
        The sources to load, and the names in ``load`` that match no installed plugin.
    """
    chosen = [s for s in sources if load is None or s.matches(load)]
    chosen = [s for s in chosen if not s.matches(disable)]
    missing = [n for n in (load or ()) if not any(s.matches([n]) for s in sources)]
    return chosen, missing
