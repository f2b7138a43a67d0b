"""A plugin to assemble, and the record of one on its way through assembly.

:class:`Candidate` is what a caller hands :func:`~oracle_core.plugins.loader.assemble`;
:class:`Entry` is what assembly learns of it step by step (its import, its registration,
its configuration, its failure or its :class:`~oracle_core.plugins.registry.Plugin`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oracle_core.authoring.manifest import ManifestWarning
from oracle_core.errors import PluginError
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.registry import Plugin
from oracle_core.plugins.validate import Problem


@dataclass
class Candidate:
    """A plugin to assemble: its source and, once imported, its object."""

    source: PluginSource
    obj: Any = None


def source_for_object(obj: Any) -> PluginSource:
    """A :class:`PluginSource` for a plugin given in code (a module or an object)."""
    name = getattr(obj, "__name__", None) or type(obj).__name__
    return PluginSource(name=str(name).rsplit(".", 1)[-1], value=str(getattr(obj, "__name__", "")))


@dataclass
class Entry:
    """One candidate on its way through assembly."""

    source: PluginSource
    obj: Any = None
    registration: list[Problem] = field(default_factory=list)
    parsed: dict[str, Any] = field(default_factory=dict)
    registered: bool = False
    failure: PluginError | None = None
    plugin: Plugin | None = None
    warnings: list[ManifestWarning] = field(default_factory=list)
    config: Any = None
    import_seconds: float | None = None
    """How long its import took (``None``: given in code, never imported here)."""
    modules: list[str] | None = None
    """The files of the modules its import loaded first (``None``: not known)."""
