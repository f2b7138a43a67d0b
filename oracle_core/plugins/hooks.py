"""Calling one plugin's hooks through pluggy, and tracing every hook call.

The core calls each hook plugin by plugin, so every result is attributed to the plugin that
produced it. It still goes through pluggy's own call machinery, so argument subsetting,
``wrapper=True`` / ``hookwrapper=True`` implementations, ``tryfirst`` / ``trylast`` order
and hook-call monitoring work as pluggy documents them, within one plugin.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pluggy

from oracle_core import hookspecs

ASSEMBLY_HOOKS = ("oracle_manifest", "oracle_tools", "oracle_middleware", "oracle_routes")
"""Hooks called once, synchronously, while the oracle assembles its registry."""

LIFECYCLE_HOOKS = ("oracle_startup", "oracle_shutdown")
"""Hooks called when the oracle starts and closes (sync or async)."""

HOOK_NAMES = (*ASSEMBLY_HOOKS, *LIFECYCLE_HOOKS)
"""Every oracle hook, in the order a plugin meets them."""


def new_plugin_manager() -> pluggy.PluginManager:
    """A fresh pluggy manager with oracle-core's hookspecs (one per oracle, never global)."""
    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    return manager


class HookImpls:
    """Each registered plugin's implementations of the oracle hooks, by plugin and hook.

    Built in one pass over the manager's hook callers (linear in the number of
    implementations), so looking up one plugin's implementations costs nothing per call;
    ``manager.get_hookcallers(plugin)`` or ``subset_hook_caller`` would scan every plugin
    on every call. Within a plugin the implementations keep pluggy's order.

    Args:
        manager: the oracle's plugin manager, with the plugins already registered.
        hooks: the hooks to index.
    """

    def __init__(self, manager: pluggy.PluginManager, hooks: Iterable[str] = HOOK_NAMES) -> None:
        self._by_plugin: dict[int, dict[str, list[pluggy.HookImpl]]] = {}
        for hook in hooks:
            for impl in getattr(manager.hook, hook).get_hookimpls():
                self._by_plugin.setdefault(id(impl.plugin), {}).setdefault(hook, []).append(impl)

    def of(self, plugin: object, hook: str) -> list[pluggy.HookImpl]:
        """The implementations of ``hook`` that ``plugin`` registered (empty if none)."""
        return self._by_plugin.get(id(plugin), {}).get(hook, [])


def call_plugin_hook(
    manager: pluggy.PluginManager,
    hook: str,
    impls: Sequence[pluggy.HookImpl],
    kwargs: Mapping[str, object],
) -> list[Any]:
    """Call ``hook`` on one plugin's implementations ``impls``; return their results.

    Each implementation gets only the arguments it asks for; a wrapper of the plugin wraps
    the plugin's own implementations. Raises whatever an implementation raised.
    """
    if not impls:
        return []
    # ``PluginManager._hookexec`` is the one seam every pluggy hook call goes through: it
    # is where ``add_hookcall_monitoring`` and ``enable_tracing`` install themselves, and it
    # runs pluggy's multicall (argument subsetting, wrappers, result collection). Calling it
    # with one plugin's implementations gives exactly pluggy's semantics for that plugin.
    # The public alternatives cost O(plugins) per call (``subset_hook_caller`` filters every
    # implementation, and removes plugins rather than selecting one) or need private API
    # as well (a per-plugin ``HookCaller`` must be filled with ``_add_hookimpl``). None of
    # the oracle hooks is ``firstresult``, so every non-None result comes back in a list.
    result = manager._hookexec(hook, impls, kwargs, False)
    return result if isinstance(result, list) else [result]


class HookTrace:
    """Prints every hook call and the plugin it went to, for ``ORACLE_TRACE_PLUGINS=1``.

    Lines look like ``oracle: hook oracle_tools -> weather``. A plugin is shown by the
    label last given for it (its manifest name once that is known), else pluggy's name.
    """

    def __init__(self) -> None:
        self._labels: dict[int, str] = {}

    def label(self, plugin: object, name: str) -> None:
        """Show ``plugin`` as ``name`` from now on."""
        self._labels[id(plugin)] = name

    def install(self, manager: pluggy.PluginManager) -> None:
        """Trace every later hook call of ``manager`` (through pluggy's hook-call monitoring)."""
        manager.add_hookcall_monitoring(self._before, self._after)

    def _before(
        self, hook: str, impls: Sequence[pluggy.HookImpl], kwargs: Mapping[str, object]
    ) -> None:
        for plugin in dict.fromkeys(self._name(impl) for impl in impls):
            # sys.stderr is read on every call: test capture and redirection replace it.
            print(f"oracle: hook {hook} -> {plugin}", file=sys.stderr, flush=True)

    def _after(
        self,
        outcome: pluggy.Result[object],
        hook: str,
        impls: Sequence[pluggy.HookImpl],
        kwargs: Mapping[str, object],
    ) -> None:
        if outcome.exception is not None:
            plugins = ", ".join(dict.fromkeys(self._name(impl) for impl in impls))
            error = outcome.exception
            print(
                f"oracle: hook {hook} -> {plugins} raised {type(error).__name__}: {error}",
                file=sys.stderr,
                flush=True,
            )

    def _name(self, impl: pluggy.HookImpl) -> str:
        return self._labels.get(id(impl.plugin), impl.plugin_name)
