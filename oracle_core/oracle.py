"""The :class:`Oracle`: the application object that owns its plugins, store and model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pluggy

from oracle_core.assembly import Candidate, assemble, new_plugin_manager, source_for_object
from oracle_core.discovery import find_entry_points, select
from oracle_core.errors import PluginLoadError, StrictPluginError
from oracle_core.registry import Registry
from oracle_core.settings import Settings


class Oracle:
    """An agent assembled from plugins.

    Nothing is global: each oracle owns its plugin manager, registry and store, so tests and
    embedding applications can build as many as they like.

    Args:
        plugins: plugin modules or objects to register from code, before any entry point.
        entry_points: also load the installed ``oracle.plugins`` entry points (filtered by
            ``ORACLE_LOAD_PLUGINS`` and ``ORACLE_DISABLE_PLUGINS``).
        settings: operator settings; default :meth:`Settings.from_env`.
        path: folders to search for entry points instead of ``sys.path``.

    Raises:
        StrictPluginError: when ``settings.strict`` is set and any plugin failed.
    """

    def __init__(
        self,
        plugins: Sequence[Any] = (),
        *,
        entry_points: bool = True,
        settings: Settings | None = None,
        path: Sequence[str] | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.plugin_manager: pluggy.PluginManager = new_plugin_manager()
        self.registry: Registry = self._assemble(plugins, entry_points, path)

    def _assemble(
        self, plugins: Sequence[Any], entry_points: bool, path: Sequence[str] | None
    ) -> Registry:
        settings = self.settings
        candidates = [Candidate(source_for_object(obj), obj) for obj in plugins]
        early: list[PluginLoadError] = []
        if entry_points:
            sources, missing = select(
                find_entry_points(path), settings.load_plugins, settings.disable_plugins
            )
            candidates += [Candidate(source) for source in sources]
            early += [
                PluginLoadError(
                    f"ORACLE_LOAD_PLUGINS names {name!r}, but no installed plugin or distribution "
                    "has that name: check the spelling, or pip install it",
                    plugin=name,
                )
                for name in missing
            ]
        registry = assemble(
            candidates,
            manager=self.plugin_manager,
            config=settings.plugin_config,
            trace=settings.trace_plugins,
            failures=early,
        )
        if settings.strict and registry.failures:
            raise StrictPluginError(list(registry.failures))
        return registry
