"""A run's capabilities: the plugins loaded in its thread, and the meta-tools over them.

A :class:`CapabilityState` is made for each run (or each tool call from outside a run)
from the thread's loaded plugins. It holds the loaded set, in load order and only ever
growing, and the four meta-tools as :class:`~oracle_core.plugins.core_tools.CoreTool`
objects working on it; :meth:`CapabilityState.resolve` finds a meta-tool or a plugin tool
by name, so the executor runs either without knowing which meta-tool is which. A load
changes the state at once: a second ``load_capability`` of the same model response sees
the first, and the run loop reads what to save and show next from the state.

What every run shares (the registry, the listing limit, the search index, built once on
the first search, and the thread's operations) is one :class:`Capabilities` per oracle.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools import GET_OPERATION_TOOL, META_TOOLS
from oracle_core.capabilities.meta_tools.finding import search_capabilities
from oracle_core.capabilities.meta_tools.listing import list_capabilities
from oracle_core.capabilities.meta_tools.loading import load_capability
from oracle_core.plugins.core_tools import (
    GET_OPERATION,
    LIST_CAPABILITIES,
    LOAD_CAPABILITY,
    SEARCH_CAPABILITIES,
    CoreTool,
)
from oracle_core.plugins.registry import BoundTool, Registry
from oracle_core.settings import DEFAULT_LIST_LIMIT
from oracle_core.values.messages import ToolCall, ToolResult
from oracle_core.values.tool_errors import error_result

if TYPE_CHECKING:
    from oracle_core.capabilities.search import CapabilitySearch
    from oracle_core.settings import Settings

log = logging.getLogger("oracle_core.run")

_LIST, _LOAD, _SEARCH = META_TOOLS  # the order they are shown in (list, load, search)


class OperationsAccess(Protocol):
    """What ``get_operation`` reads and cancels operations through (the background work)."""

    async def get_operation(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """Answer a ``get_operation`` call about an operation of the call's thread."""
        ...


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
        # Keyed by the core's own name constants, never by the shared tool objects' names.
        tools: dict[str, CoreTool] = {
            LIST_CAPABILITIES: ListCapabilities(self),
            LOAD_CAPABILITY: LoadCapability(self),
            SEARCH_CAPABILITIES: SearchCapabilities(self),
        }
        if shared.operations is not None:
            tools[GET_OPERATION] = GetOperation(shared.operations)
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


def _failed(call: ToolCall, message: str, error: BaseException) -> ToolResult:
    return error_result(call, message, error)


@dataclass(frozen=True)
class ListCapabilities:
    """``list_capabilities`` over a run's state."""

    state: CapabilityState

    @property
    def tool(self) -> Tool:
        """The tool as the model is shown it."""
        return _LIST

    async def __call__(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """The listing, as the thread's loads stand now."""
        state = self.state
        content = list_capabilities(
            state.registry, state.loaded, arguments, state.shared.list_limit
        )
        return ToolResult(call.id, call.name, content)


@dataclass(frozen=True)
class LoadCapability:
    """``load_capability`` over a run's state: a load takes effect in the state at once."""

    state: CapabilityState

    @property
    def tool(self) -> Tool:
        """The tool as the model is shown it."""
        return _LOAD

    async def __call__(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """Load every requested plugin, or none; the result names those newly loaded."""
        outcome = load_capability(self.state.registry, self.state.loaded, arguments)
        self.state.load(outcome.loaded)  # no await before: parallel loads see each other
        return ToolResult(
            call.id,
            call.name,
            outcome.content,
            is_error=outcome.error,
            loaded=tuple(outcome.loaded),
        )


@dataclass(frozen=True)
class SearchCapabilities:
    """``search_capabilities`` over a run's state, searched off the event loop."""

    state: CapabilityState

    @property
    def tool(self) -> Tool:
        """The tool as the model is shown it."""
        return _SEARCH

    async def __call__(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """Each query's candidates; a failing search is an error result, never raised."""
        loaded = self.state.loaded
        try:  # off the event loop: the first search builds or loads the index
            found = await asyncio.to_thread(
                lambda: search_capabilities(self.state.shared.search(), loaded, arguments)
            )
        except Exception as error:
            log.exception("search_capabilities failed")
            return _failed(call, f"search_capabilities failed: {error}", error)
        return ToolResult(call.id, call.name, found.content, is_error=found.error)


@dataclass(frozen=True)
class GetOperation:
    """``get_operation``: asks the oracle's operations (they answer for the call's thread)."""

    operations: OperationsAccess

    @property
    def tool(self) -> Tool:
        """The tool as the model is shown it."""
        return GET_OPERATION_TOOL

    async def __call__(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """What the operation named in ``arguments`` is (cancelled first, if asked)."""
        return await self.operations.get_operation(call, arguments)
