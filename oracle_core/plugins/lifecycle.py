"""Starting and stopping plugins: ``oracle_startup`` in dependency order, shutdown in reverse.

Like datasette, an oracle counts as started only once every startup hook has returned. A
plugin whose startup hook raises or overruns the timeout is reported and left out, with
its tools, middleware and routes, and so are the plugins that depend on it; the rest
starts. In strict mode the first such failure is fatal. Each failure is logged (one
line at ERROR, the traceback at DEBUG). Shutdown runs only for plugins whose startup
succeeded, in reverse order, and never raises: each error is logged.

The loader's guard against patching the core (:mod:`oracle_core.plugins.integrity`) holds
here too: the guarded modules are recorded once, and compared after each plugin's startup
and shutdown hook. A startup hook that changed them is undone and its plugin left out, like
one that raised; a shutdown hook's change is undone and logged.

Hooks may be sync or async. A sync hook runs on a worker thread (so a hung one can be
abandoned without blocking the event loop); an async one is awaited on the caller's loop.
"""

from __future__ import annotations

import asyncio
import graphlib
import heapq
import inspect
import logging
from typing import Any

import pluggy

from oracle_core.authoring.host import OracleHandle
from oracle_core.errors import DependencyError, PluginError, PluginLoadError, StrictPluginError
from oracle_core.plugins.hooks import LIFECYCLE_HOOKS, HookImpls, call_plugin_hook
from oracle_core.plugins.integrity import CoreSnapshot
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.plugins.resolve import dependency_graph
from oracle_core.plugins.worker import HookTimeout, HookWorker

log = logging.getLogger("oracle_core.plugins")


def startup_order(registry: Registry) -> list[Plugin]:
    """The registry's plugins in startup order: ``depends_on`` first, then registration order.

    Of the plugins whose dependencies have started, the earliest registered goes next.
    """
    index = {name: position for position, name in enumerate(registry.plugins)}
    sorter = graphlib.TopologicalSorter(dependency_graph(registry))
    sorter.prepare()  # assembly already left out every plugin on a cycle
    ready = [(index[name], name) for name in sorter.get_ready()]
    heapq.heapify(ready)
    order: list[Plugin] = []
    while ready:
        _, name = heapq.heappop(ready)
        order.append(registry.plugins[name])
        sorter.done(name)
        for after in sorter.get_ready():
            heapq.heappush(ready, (index[after], after))
    return order


class Lifecycle:
    """Runs the plugins' ``oracle_startup`` and ``oracle_shutdown`` hooks.

    Args:
        manager: the oracle's plugin manager, with the registry's plugins registered.
        registry: the assembled plugins.
        timeout: seconds each plugin's hook may take.
        strict: a startup failure raises :class:`~oracle_core.StrictPluginError`
            (``ORACLE_STRICT_PLUGINS=1``) instead of leaving the plugin out.
        core: the guarded core as it must stay (default: the registry's, taken before
            any plugin was imported; else as it is now).
    """

    def __init__(
        self,
        manager: pluggy.PluginManager,
        registry: Registry,
        *,
        timeout: float,
        strict: bool = False,
        core: CoreSnapshot | None = None,
    ) -> None:
        self._manager = manager
        self._registry = registry
        self._timeout = timeout
        self._strict = strict
        self._impls = HookImpls(manager, LIFECYCLE_HOOKS)
        self._worker = HookWorker("oracle-lifecycle")
        self._started: list[Plugin] = []
        self._result: Registry | None = None
        self._core = core or registry.core or CoreSnapshot.take()

    @property
    def started(self) -> list[str]:
        """The plugins whose startup succeeded, in the order they started."""
        return [p.name for p in self._started]

    async def start(self, oracle: OracleHandle) -> Registry:
        """Start every plugin in dependency order; return the registry of those that started.

        Each ``oracle_startup`` gets ``oracle``. Calling it again returns the same registry.

        Returns:
            A new registry without the plugins whose startup failed (nor their dependents),
            with a :class:`~oracle_core.PluginError` for each appended to ``failures``.

        Raises:
            StrictPluginError: in strict mode, for the first failure (the plugins already
                started are stopped first).
        """
        if self._result is not None:
            return self._result
        failures: list[PluginError] = []
        failed: set[str] = set()
        for plugin in startup_order(self._registry):
            failure = await self._start_one(plugin, failed, oracle)
            if failure is None:
                self._started.append(plugin)
                continue
            log.error("plugin %r: %s", plugin.name, failure)
            if failure.__cause__ is not None:
                log.debug(
                    "plugin %r: oracle_startup traceback", plugin.name, exc_info=failure.__cause__
                )
            if self._strict:
                await self.stop(oracle)
                raise StrictPluginError([failure])
            failures.append(failure)
            failed.add(plugin.name)
            if plugin.obj is not None:  # a deferred plugin was never registered
                self._manager.unregister(plugin.obj)  # its shutdown must never run
        late = self._undo_changes()
        if late:
            log.error("oracle-core was changed during startup (%s): undone", late)
        self._result = self._registry.without(failed, failures)
        return self._result

    async def _start_one(
        self, plugin: Plugin, failed: set[str], oracle: OracleHandle
    ) -> PluginError | None:
        down = [d for d in plugin.manifest.depends_on if d in failed]
        if down:
            names = ", ".join(repr(d) for d in down)
            return DependencyError(
                f"depends_on names {names}, whose oracle_startup failed: it is left out with "
                "it; fix that plugin, or remove it from depends_on",
                plugin=plugin.name,
                distribution=plugin.source.distribution,
            )
        failure: PluginError | None = None
        try:
            await self._call(plugin, "oracle_startup", oracle)
        except HookTimeout as timeout:
            failure = PluginLoadError(
                f"{timeout} at startup: it is left out (raise ORACLE_HOOK_TIMEOUT if it needs "
                "longer, or start the slow work in the background)",
                plugin=plugin.name,
                distribution=plugin.source.distribution,
            )
        except Exception as error:
            failure = PluginLoadError(
                f"hook oracle_startup raised {type(error).__name__}: {error}: it is left out",
                plugin=plugin.name,
                distribution=plugin.source.distribution,
            )
            failure.__cause__ = error  # its traceback, logged at DEBUG
        # Checked after each plugin whose startup hook ran (one with none ran no code of its
        # own; what a thread changes meanwhile is found by the next check, or at the end).
        ran = bool(self._impls.of(plugin.obj, "oracle_startup"))
        changed = self._undo_changes() if ran else None
        if changed:  # a patched core outweighs any other failure of the hook
            return PluginLoadError(
                f"oracle_startup changed oracle-core ({changed}); the change was undone and "
                "the plugin left out: a plugin may not patch the core, use middleware or "
                "hooks instead",
                plugin=plugin.name,
                distribution=plugin.source.distribution,
            )
        return failure

    def _undo_changes(self) -> str | None:
        """What a hook changed in the guarded core (undone now), ``None`` when nothing."""
        changed = self._core.changes()
        if not changed:
            return None
        self._core.restore()
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        return ", ".join(changed[:5]) + more

    async def stop(self, oracle: OracleHandle) -> None:
        """Shut down the plugins that started, in reverse order. Never raises.

        Each ``oracle_shutdown`` gets ``oracle`` and the same timeout as startup; an error or
        a timeout is logged naming the plugin, and the next plugin is shut down all the same.
        """
        while self._started:
            plugin = self._started.pop()
            try:
                await self._call(plugin, "oracle_shutdown", oracle)
            except Exception as error:  # HookTimeout included
                log.error(
                    "plugin %r: oracle_shutdown failed: %s: %s",
                    plugin.name,
                    type(error).__name__,
                    error,
                    exc_info=not isinstance(error, HookTimeout),
                )
            changed = self._undo_changes()
            if changed:
                log.error(
                    "plugin %r: oracle_shutdown changed oracle-core (%s); the change was undone: "
                    "a plugin may not patch the core",
                    plugin.name,
                    changed,
                )
        self._worker.close()

    async def _call(self, plugin: Plugin, hook: str, oracle: OracleHandle) -> None:
        impls = self._impls.of(plugin.obj, hook)
        if not impls:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout

        handle = own_handle(oracle, plugin.name)

        def call() -> list[Any]:
            return call_plugin_hook(self._manager, hook, impls, {"oracle": handle})

        results = await self._worker.run_async(call, hook, self._timeout)
        pending = [r for r in results if inspect.isawaitable(r)]
        for position, awaitable in enumerate(pending):
            try:
                await self._await(awaitable, hook, deadline)
            except BaseException:
                for never in pending[position + 1 :]:
                    if inspect.iscoroutine(never):
                        never.close()  # not awaited because an earlier one failed
                raise

    async def _await(self, awaitable: Any, hook: str, deadline: float) -> None:
        scope = asyncio.timeout_at(deadline)
        try:
            async with scope:
                await awaitable
        except TimeoutError:
            if scope.expired():
                raise HookTimeout(hook, self._timeout) from None
            raise


def own_handle(oracle: OracleHandle, plugin: str) -> OracleHandle:
    """The handle ``plugin``'s own hooks get: bound to it, where ``oracle`` can bind one.

    A :class:`~oracle_core.handle.PluginHandle` bound to a plugin lets that plugin replace
    its own tools (an MCP server whose list changed), and no other plugin's.
    """
    bind = getattr(oracle, "for_plugin", None)
    return bind(plugin) if callable(bind) else oracle
