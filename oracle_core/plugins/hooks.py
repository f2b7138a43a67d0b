"""Calling one plugin's hooks through pluggy, and tracing every hook call.

The core calls each hook plugin by plugin, so every result is attributed to the plugin that
produced it. It still goes through pluggy's own call machinery, so argument subsetting,
``wrapper=True`` / ``hookwrapper=True`` implementations, ``tryfirst`` / ``trylast`` order
and hook-call monitoring work as pluggy documents them, within one plugin.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pluggy

from oracle_core import hookspecs

ASSEMBLY_HOOKS = ("oracle_manifest", "oracle_tools", "oracle_middleware", "oracle_routes")
"""Hooks called once, synchronously, while the oracle assembles its registry."""

LIFECYCLE_HOOKS = ("oracle_startup", "oracle_shutdown")
"""Hooks called when the oracle starts and closes (sync or async)."""

MCP_HOOKS = ("oracle_mcp_servers",)
"""Hooks called once at assembly, after every plugin's assembly hooks (see oracle_core.plugins.mcp)."""

EXPORT_HOOKS = ("oracle_prompts", "oracle_resources")
"""Hooks called once, synchronously, when the oracle is first served over MCP
(see oracle_core.server.mcp)."""

HOOK_NAMES = (*ASSEMBLY_HOOKS, *MCP_HOOKS, *LIFECYCLE_HOOKS, *EXPORT_HOOKS)
"""Every oracle hook, in the order a plugin meets them."""


def new_plugin_manager() -> pluggy.PluginManager:
    """A fresh pluggy manager with oracle-core's hookspecs (one per oracle, never global)."""
    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    return manager


def parse_hookimpl(manager: pluggy.PluginManager, plugin: object, name: str) -> Any:
    """What ``manager.parse_hookimpl_opts(plugin, name)`` returns, without its slow path.

    pluggy reads each attribute through ``inspect.getattr_static`` (microseconds each, a
    dozen attributes a module, thousands of modules). For a module's own attribute (in its
    ``__dict__``, not shadowed by the module type) pluggy's answer is known at once: a plain
    function's marker options (the dict in its ``<project>_impl`` attribute), and ``None``
    for anything that is no function, static method, class method or bound method.
    Everything else is asked of pluggy.
    """
    if (
        isinstance(plugin, types.ModuleType)
        and name not in _MODULE_TYPE_NAMES
        and type(manager).parse_hookimpl_opts is pluggy.PluginManager.parse_hookimpl_opts
    ):
        value = plugin.__dict__.get(name, _ABSENT)
        if type(value) is types.FunctionType:
            opts = getattr(value, f"{manager.project_name}_impl", None)
            return opts if isinstance(opts, dict) else None
        if value is not _ABSENT and not (
            inspect.isfunction(value)
            or isinstance(value, staticmethod | classmethod | types.MethodType)
        ):
            return None
    return manager.parse_hookimpl_opts(plugin, name)


_ABSENT = object()
_MODULE_TYPE_NAMES = frozenset(dir(types.ModuleType))


class _Parsed(pluggy.PluginManager):
    """A scratch manager that takes the hook options already parsed for the plugin at hand.

    ``parse_hookimpl_opts`` reads every attribute of a plugin (through
    ``inspect.getattr_static``, which is slow); the loader has already read them once to
    find problems. An attribute not in ``parsed`` is parsed as pluggy parses it.
    """

    plugin: object = None
    parsed: Mapping[str, Any] = {}

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        if plugin is self.plugin and name in self.parsed:
            opts: pluggy.HookimplOpts | None = self.parsed[name]
            return opts
        return super().parse_hookimpl_opts(plugin, name)


def register_plugins(
    manager: pluggy.PluginManager,
    plugins: Sequence[tuple[object, str | None]],
    parsed: Sequence[Mapping[str, Any] | None] | None = None,
) -> list[Exception | None]:
    """Register ``plugins`` (object, name) in order, as ``manager.register`` would one by one.

    Returns, for each plugin, ``None`` once it is registered, or the error ``register``
    raised for it (the manager is then unchanged for that plugin). A blocked name is
    skipped, as ``register`` skips it.

    ``PluginManager.register`` costs time in proportion to the plugins already registered
    (it compares the new plugin with every registered one, and ``HookCaller._add_hookimpl``
    scans every implementation of the hook for the first wrapper), so registering
    thousands of plugins one by one is quadratic. Here pluggy's own ``register`` still
    parses and verifies each plugin, against a scratch manager with the same hookspecs
    that never holds more than that one plugin; its implementations are then added to
    ``manager`` in the order pluggy would give them: the plain ones (neither
    ``tryfirst``, ``trylast`` nor a wrapper, nearly all of them) spliced in at once after
    the last plain implementation, and the rest through pluggy's own ``_add_hookimpl``.
    pluggy orders plain implementations by registration, independently of where those
    others go, so the result equals one-by-one registration (a test checks that).

    ``parsed`` may give, for each plugin, what ``manager.parse_hookimpl_opts`` returned
    for its attributes (see :func:`~oracle_core.plugins.validate.hooks.hook_problems`); they are
    then not parsed again. It is used only when ``manager`` parses as pluggy's own
    ``PluginManager`` does (same method, same project name).
    """
    same = (
        type(manager).parse_hookimpl_opts is pluggy.PluginManager.parse_hookimpl_opts
        and manager.project_name == hookspecs.PROJECT_NAME
    )
    scratch = _Parsed(hookspecs.PROJECT_NAME)
    scratch.add_hookspecs(hookspecs)
    registered = manager._name2plugin  # pluggy's name -> plugin map (None: a blocked name)
    present = {id(p) for p in registered.values() if p is not None}
    outcome: list[Exception | None] = []
    plain: dict[str, list[pluggy.HookImpl]] = {}
    special: list[tuple[str, pluggy.HookImpl]] = []
    for index, (obj, wanted) in enumerate(plugins):
        name = wanted or manager.get_canonical_name(obj)
        if name in registered and registered[name] is None:
            outcome.append(None)  # blocked: register returns None and registers nothing
            continue
        if name in registered or id(obj) in present:
            outcome.append(ValueError(f"Plugin name or object already registered: {name}={obj}"))
            continue
        known = parsed[index] if parsed is not None and same else None
        scratch.plugin, scratch.parsed = (obj, known) if known is not None else (None, {})
        try:
            scratch.register(obj, name=name)
        except Exception as error:
            outcome.append(error)
            continue
        finally:
            scratch.plugin, scratch.parsed = None, {}
        for caller in list(vars(scratch.hook).values()):
            for impl in caller.get_hookimpls():
                if impl.tryfirst or impl.trylast or impl.wrapper or impl.hookwrapper:
                    special.append((caller.name, impl))
                else:
                    plain.setdefault(caller.name, []).append(impl)
        scratch.unregister(obj)  # cheap: the scratch manager holds only this plugin
        registered[name] = obj
        present.add(id(obj))
        outcome.append(None)
    for hook, impls in plain.items():
        caller = _caller(manager, hook)
        current = caller._hookimpls
        # Where pluggy puts a plain implementation: after the last non-tryfirst one
        # before the first wrapper.
        split = next((i for i, m in enumerate(current) if m.wrapper or m.hookwrapper), len(current))
        at = split
        while at > 0 and current[at - 1].tryfirst:
            at -= 1
        current[at:at] = impls
    for hook, impl in special:
        _caller(manager, hook)._add_hookimpl(impl)
    return outcome


def _caller(manager: pluggy.PluginManager, hook: str) -> pluggy.HookCaller:
    """The manager's caller of ``hook``, made as ``register`` makes one for an unknown hook."""
    caller: pluggy.HookCaller | None = getattr(manager.hook, hook, None)
    if caller is None:
        caller = pluggy.HookCaller(hook, manager._hookexec)
        setattr(manager.hook, hook, caller)
    return caller


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
