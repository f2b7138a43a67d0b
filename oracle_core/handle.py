"""What plugin code is handed of a running oracle: an :class:`~oracle_core.OracleHandle`, no more.

``oracle_startup`` and ``oracle_shutdown`` hooks, and tools through ``ToolContext.oracle``,
get a :class:`PluginHandle`, never the :class:`~oracle_core.Oracle` itself. Middleware keep
what a hook gave them. The handle offers the members :class:`~oracle_core.OracleHandle`
names (settings, plugin state, a read-only view of the registry, the thread store's reads,
the model, runs and credentials) and nothing that reaches past the gate: the registry view
shows each plugin's tools as descriptions (:class:`ToolInfo`: name, description, schema),
never the tool objects that run, and nothing of the run loop's parts (deps, executor, gate,
requests) is reachable through it.

This is an API boundary, not a sandbox: a plugin runs in the oracle's process and is
trusted code (Python can always reach further if it sets out to). What it promises is that
no API offered to a plugin runs a tool without the gate.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from oracle_core.authoring.manifest import ManifestWarning, PluginManifest, Visibility
from oracle_core.errors import PluginConflictError, PluginError
from oracle_core.plugins.core_tools import META_TOOL_NAMES
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.run.plugin_calls import CallScope, MeteredModel, PluginMeter
from oracle_core.values.messages import function_definition
from oracle_core.values.threads import ThreadState, ThreadSummary

if TYPE_CHECKING:
    from oracle_core.authoring.context import ToolContext
    from oracle_core.authoring.parts import ModelView
    from oracle_core.authoring.secrets import Secret
    from oracle_core.models.base import Model
    from oracle_core.settings import Settings
    from oracle_core.store.base import Checkpointer
    from oracle_core.values.events import Event
    from oracle_core.values.result import RunResult


class Running(Protocol):
    """What a :class:`PluginHandle` uses of the oracle (the :class:`~oracle_core.Oracle` is one)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def registry(self) -> Registry: ...

    @property
    def checkpointer(self) -> Checkpointer: ...

    @property
    def model(self) -> Model: ...

    def plugin_state(self, plugin: str) -> dict[str, Any]: ...

    def stream(
        self, thread_id: str, message: str, *, user_id: str = ..., text_deltas: bool = ...
    ) -> AsyncIterator[Event]: ...

    async def run(self, thread_id: str, message: str, *, user_id: str = ...) -> RunResult: ...

    async def supply_credential(
        self, plugin: str, name: str, value: str | Secret, *, user_id: str = ...
    ) -> list[RunResult]: ...

    def replace_plugin(self, plugin: Plugin) -> None: ...


@dataclass(frozen=True)
class ToolInfo:
    """A tool as another plugin may read it: what the model is shown of it, a copy.

    Attributes:
        name: the tool's name.
        description: what it does, as the model reads it.
        parameters: the JSON schema of its arguments (a copy).
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI ``tools`` entry."""
        return function_definition(self.name, self.description, copy.deepcopy(self.parameters))


@dataclass(frozen=True)
class PluginInfo:
    """One assembled plugin as another plugin may read it (copies, never the live objects).

    Attributes:
        name: its name.
        manifest: a copy of its manifest.
        visibility: its tier.
        tools: its tools, as :class:`ToolInfo`.
        config: its configuration.
    """

    name: str
    manifest: PluginManifest
    visibility: Visibility
    tools: tuple[ToolInfo, ...]
    config: Any

    @classmethod
    def of(cls, plugin: Plugin) -> PluginInfo:
        """The view of ``plugin``."""
        tools = tuple(
            ToolInfo(str(t.name), str(t.description), copy.deepcopy(dict(t.parameters)))
            for t in plugin.tools
        )
        manifest = plugin.manifest.model_copy(deep=True)
        return cls(plugin.name, manifest, plugin.visibility, tools, plugin.config)


class RegistryInfo:
    """The registry as plugins may read it: which plugins run, which failed, and why.

    Args:
        registry: the oracle's registry now.
    """

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._views: dict[str, PluginInfo] = {}

    @property
    def plugins(self) -> Mapping[str, PluginInfo]:
        """Every plugin that assembled and started, by name, in registration order."""
        return {name: self._view(name) for name in self._registry.plugins}

    @property
    def failures(self) -> Sequence[PluginError]:
        """Why each plugin that was left out was left out."""
        return tuple(self._registry.failures)

    @property
    def warnings(self) -> Sequence[ManifestWarning]:
        """The soft limits the plugins' manifests exceed."""
        return tuple(self._registry.warnings)

    def get(self, name: str) -> PluginInfo | None:
        """The plugin called ``name``, if it is there."""
        return self._view(name) if name in self._registry.plugins else None

    def __contains__(self, name: object) -> bool:
        return name in self._registry.plugins

    def __len__(self) -> int:
        return len(self._registry.plugins)

    def __iter__(self) -> Iterator[PluginInfo]:
        return (self._view(name) for name in self._registry.plugins)

    def _view(self, name: str) -> PluginInfo:
        view = self._views.get(name)
        if view is None:
            view = self._views[name] = PluginInfo.of(self._registry.plugins[name])
        return view


class RegistryViews:
    """The view of an oracle's registry as it is now, made once per registry and shared by
    the oracle's handles (a registry is immutable; the oracle swaps in a new one when a
    plugin's tools change), and the meter of their model calls (one price table per
    oracle). It holds no reference to the oracle."""

    def __init__(self) -> None:
        self._last: tuple[Registry, RegistryInfo] | None = None
        self._meter: PluginMeter | None = None

    def meter(self, oracle: Running) -> PluginMeter:
        """The meter of the plugins' model calls of ``oracle`` (made on first use)."""
        if self._meter is None:
            from oracle_core.models.cost import PriceTable

            settings = oracle.settings
            self._meter = PluginMeter(oracle.checkpointer, settings.budgets(), PriceTable())
        return self._meter

    def of(self, registry: Registry) -> RegistryInfo:
        """The view of ``registry`` (made on first use)."""
        last = self._last
        if last is None or last[0] is not registry:
            last = self._last = (registry, RegistryInfo(registry))
        return last[1]


class ThreadReads:
    """The thread store as plugins may use it: read threads, list them, delete one.

    Args:
        store: the oracle's store (its writes, leases and operations are not offered).
    """

    def __init__(self, store: Checkpointer) -> None:
        self._store = store

    async def load(self, thread_id: str) -> ThreadState:
        """The thread's state (an unknown thread is empty)."""
        return await self._store.load(thread_id)

    async def threads(self) -> list[str]:
        """Every thread id stored, most recently updated first."""
        return await self._store.threads()

    async def thread_summaries(self, *, limit: int | None = None) -> list[ThreadSummary]:
        """The stored threads with their last activity and size, most recently updated first."""
        return await self._store.thread_summaries(limit=limit)

    async def delete(self, thread_id: str) -> bool:
        """Remove a thread and everything kept for it; ``True`` when it existed."""
        return await self._store.delete(thread_id)


class PluginHandle:
    """A running oracle as plugin code gets it (satisfies :class:`~oracle_core.OracleHandle`).

    Args:
        oracle: the oracle.
        plugin: the plugin this handle was given to (``None``: tools of any plugin).
        views: where the registry's views are kept (the oracle's own; default: a new one).
    """

    __slots__ = ("_oracle", "_plugin", "_scope", "_views")

    def __init__(
        self,
        oracle: Running,
        plugin: str | None = None,
        *,
        views: RegistryViews | None = None,
        scope: CallScope | None = None,
    ) -> None:
        self._oracle = oracle
        self._plugin = plugin
        self._views = views if views is not None else RegistryViews()
        self._scope = scope

    def for_plugin(self, plugin: str) -> PluginHandle:
        """The handle of the same oracle given to ``plugin``'s hooks (sharing its views)."""
        return PluginHandle(self._oracle, plugin, views=self._views)

    def for_call(self, context: ToolContext) -> PluginHandle:
        """The handle a tool call gets (``context``'s): its model calls are put down to the
        call's plugin, run, thread and user."""
        scope = CallScope(
            context.plugin, context.run_id or "", context.thread_id if context.run_id else "",
            context.user_id,
        )  # fmt: skip
        return PluginHandle(self._oracle, context.plugin, views=self._views, scope=scope)

    @property
    def settings(self) -> Settings:
        """The operator's settings."""
        return self._oracle.settings

    def plugin_state(self, plugin: str) -> dict[str, Any]:
        """The per-oracle state dict of ``plugin``."""
        return self._oracle.plugin_state(plugin)

    @property
    def registry(self) -> RegistryInfo:
        """Every plugin that assembled and started, as descriptions (never runnable tools)."""
        return self._views.of(self._oracle.registry)

    @property
    def checkpointer(self) -> ThreadReads:
        """The thread store's reads (and deleting a thread)."""
        return ThreadReads(self._oracle.checkpointer)

    @property
    def model(self) -> ModelView:
        """The model runs talk to, for a plugin's own model calls: each call is in the usage
        ledger, put down to this handle's plugin (and the run it is made in), and spends
        from the budgets (run/plugin_calls.py)."""
        meter = self._views.meter(self._oracle)
        return MeteredModel(self._oracle.model, meter, self._plugin or "", self._scope)

    @property
    def own(self) -> Plugin | None:
        """The plugin this handle was given to, as the oracle assembled it (else ``None``)."""
        return self._oracle.registry.get(self._plugin) if self._plugin is not None else None

    def stream(
        self,
        thread_id: str,
        message: str,
        *,
        user_id: str = "default",
        text_deltas: bool = True,
    ) -> AsyncIterator[Event]:
        """Run one user message on a thread, yielding events (a whole run, under the gate)."""
        return self._oracle.stream(thread_id, message, user_id=user_id, text_deltas=text_deltas)

    async def run(self, thread_id: str, message: str, *, user_id: str = "default") -> RunResult:
        """Run one user message on a thread to its answer (under the gate)."""
        return await self._oracle.run(thread_id, message, user_id=user_id)

    async def supply_credential(
        self, plugin: str, name: str, value: str | Secret, *, user_id: str = "default"
    ) -> list[RunResult]:
        """Store a credential (sealed) and resume the runs waiting on it (an OAuth callback)."""
        return await self._oracle.supply_credential(plugin, name, value, user_id=user_id)

    def replace_plugin(self, plugin: Plugin) -> None:
        """Put new tools of this handle's own plugin in place (a server whose tools changed).

        Raises:
            PluginConflictError: for another plugin than this handle's, or a tool named like
                a meta-tool or another plugin's tool (it would shadow that tool).
        """
        if self._plugin is None or plugin.name != self._plugin:
            raise PluginConflictError(
                f"plugin {self._plugin!r} may replace only itself, not {plugin.name!r}",
                plugin=self._plugin or plugin.name,
            )
        others = {
            str(t.name) for p in self._oracle.registry if p.name != plugin.name for t in p.tools
        }
        clashes = sorted(
            n for n in (str(t.name) for t in plugin.tools) if n in others or n in META_TOOL_NAMES
        )
        if clashes:
            raise PluginConflictError(
                f"plugin {plugin.name!r} may not take the tool names {clashes} of other plugins "
                "or of the core; rename its tools",
                plugin=plugin.name,
            )
        self._oracle.replace_plugin(plugin)

    def __repr__(self) -> str:
        return f"<PluginHandle plugin={self._plugin!r}>"
