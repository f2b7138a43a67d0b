"""A run's capabilities: the plugins loaded in its thread, and the meta-tools over them.

A :class:`CapabilityState` is made for each run (or each tool call from outside a run)
from the thread's loaded plugins. It holds the loaded set, in load order and only ever
growing, and the meta-tools as :class:`~oracle_core.plugins.core_tools.CoreTool` objects
working on it, each made by its definition's handler
(:data:`~oracle_core.capabilities.meta_tools.META_TOOL_DEFINITIONS`);
:meth:`CapabilityState.resolve` finds a meta-tool or a plugin tool by name, so the executor
runs either without knowing which meta-tool is which. A load changes the state at once: a
second load of the same model response sees the first, and the run loop reads what to
save and show next from the state.

What every run shares (the registry, the listing limit, the search index, built once on
the first search, and the thread's operations) is one :class:`Capabilities` per oracle.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from oracle_core.capabilities.meta_tools import META_TOOL_DEFINITIONS
from oracle_core.capabilities.meta_tools.definition import OperationsAccess
from oracle_core.plugins.core_tools import CoreTool
from oracle_core.plugins.registry import BoundTool, Registry
from oracle_core.settings import DEFAULT_LIST_LIMIT

if TYPE_CHECKING:
    from oracle_core.capabilities.search import CapabilitySearch
    from oracle_core.settings import Settings

__all__ = ["Capabilities", "CapabilityState", "OperationsAccess"]


class Capabilities:
    """What the capability state of every run of one registry shares.

    Args:
        registry: the assembled plugins.
        settings: the oracle's settings (the listing limit, where the search index is
            kept); without them, the defaults.
        operations: the thread's operations, for ``get_operation`` (without them the tool
            does not exist).
    """

    def __init__(
        self,
        registry: Registry,
        *,
        settings: Settings | None = None,
        operations: OperationsAccess | None = None,
    ) -> None:
        self.registry = registry
        self.settings = settings
        self.list_limit = settings.list_limit if settings is not None else DEFAULT_LIST_LIMIT
        self.operations = operations
        self._search: CapabilitySearch | None = None
        self._building = threading.Lock()  # two first searches build one index

    def search(self) -> CapabilitySearch:
        """The capability search, made on first use (numpy and the semantic ranker are imported then)."""
        with self._building:
            if self._search is None:
                from oracle_core.capabilities.search import CapabilitySearch

                self._search = (
                    CapabilitySearch.for_settings(self.registry, self.settings)
                    if self.settings is not None
                    else CapabilitySearch(self.registry)
                )
            return self._search

    def state(self, loaded: Sequence[str] = ()) -> CapabilityState:
        """A fresh state for a thread whose loaded plugins are ``loaded``."""
        return CapabilityState(self, loaded)


class CapabilityState:
    """One run's loaded plugins (in load order, only ever growing) and its meta-tools.

    Args:
        shared: what every run of the registry shares.
        loaded: the plugins loaded in the thread when the run began.
    """

    def __init__(self, shared: Capabilities, loaded: Sequence[str] = ()) -> None:
        self.shared = shared
        self._loaded: list[str] = list(dict.fromkeys(loaded))
        self._since = len(self._loaded)
        # Keyed by the definitions' own names, never by the shared tool objects' names.
        tools: dict[str, CoreTool] = {}
        for definition in META_TOOL_DEFINITIONS:
            tool = definition.handler(self)
            if tool is not None:
                tools[definition.name] = tool
        self.tools: Mapping[str, CoreTool] = tools

    @property
    def registry(self) -> Registry:
        """The assembled plugins."""
        return self.shared.registry

    @property
    def loaded(self) -> tuple[str, ...]:
        """The plugins loaded in the thread now, in load order."""
        return tuple(self._loaded)

    @property
    def new(self) -> tuple[str, ...]:
        """The plugins loaded through this state, in load order (what is left to save)."""
        return tuple(self._loaded[self._since :])

    def load(self, names: Sequence[str]) -> None:
        """Add ``names`` to the loaded plugins; one already loaded keeps its place."""
        for name in names:
            if name not in self._loaded:
                self._loaded.append(name)

    def resolve(self, name: str) -> CoreTool | BoundTool | None:
        """What runs for a call of ``name``: a meta-tool, a plugin tool, or nothing.

        The registry reserves the meta-tools' names, so no plugin tool can shadow one.
        """
        return self.tools.get(name) or self.registry.tools.get(name)
