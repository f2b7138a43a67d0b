"""Assembling plugins into a :class:`~oracle_core.plugins.registry.Registry`.

Each plugin is imported, registered with the oracle's own plugin manager, asked for its
manifest, tools, middleware and routes, and validated. A plugin that fails any step is left
out and recorded with its name, distribution and the reason; the others go on.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import pluggy
from pydantic import ValidationError

from oracle_core import hookspecs
from oracle_core.errors import (
    DependencyError,
    ManifestError,
    PluginConflictError,
    PluginError,
    PluginLoadError,
    ToolArgumentsError,
)
from oracle_core.manifest import PluginManifest, describe_validation_error, manifest_warnings
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.registry import META_TOOL_NAMES, Plugin, Registry
from oracle_core.routes import Route
from oracle_core.run.middleware import Middleware
from oracle_core.tools import Tool

HOOK_NAMES = ("oracle_manifest", "oracle_tools", "oracle_middleware", "oracle_routes",
              "oracle_startup", "oracle_shutdown")  # fmt: skip

ConfigLookup = Callable[[str], dict[str, Any]]


class _Where(TypedDict):
    """Who an error is about: the keyword arguments every PluginError takes."""

    plugin: str
    distribution: str | None


def _where(plugin: str, source: PluginSource) -> _Where:
    return {"plugin": plugin, "distribution": source.distribution}


@dataclass
class Candidate:
    """A plugin to assemble: its source and, once imported, its object."""

    source: PluginSource
    obj: Any = None


def new_plugin_manager() -> pluggy.PluginManager:
    """A fresh pluggy manager with oracle-core's hookspecs (one per oracle, never global)."""
    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    return manager


def source_for_object(obj: Any) -> PluginSource:
    """A :class:`PluginSource` for a plugin given in code (a module or an object)."""
    name = getattr(obj, "__name__", None) or type(obj).__name__
    return PluginSource(name=str(name).rsplit(".", 1)[-1], value=str(getattr(obj, "__name__", "")))


class _Assembler:
    def __init__(
        self, manager: pluggy.PluginManager, config: ConfigLookup, trace: bool, oracle: Any
    ) -> None:
        self.oracle = oracle
        self.manager = manager
        self.config = config
        self.trace = trace
        self.failures: list[PluginError] = []

    def fail(self, error: PluginError, obj: Any = None) -> None:
        self.failures.append(error)
        if obj is not None and self.manager.is_registered(obj):
            self.manager.unregister(obj)

    def call(self, obj: Any, hook: str, source: PluginSource, **kwargs: Any) -> list[Any]:
        """Call one plugin's implementations of ``hook``, passing only the args it accepts."""
        results = []
        for impl in getattr(self.manager.hook, hook).get_hookimpls():
            if impl.plugin is not obj:
                continue
            if self.trace:
                print(f"oracle: hook {hook} -> {source.name}", file=sys.stderr)
            results.append(impl.function(*[kwargs[arg] for arg in impl.argnames]))
        return results

    def load(self, candidate: Candidate) -> Plugin | None:
        source = candidate.source
        where = _where(source.name, source)
        obj = candidate.obj
        if obj is None:
            try:
                obj = source.load()
            except Exception as error:
                self.fail(
                    PluginLoadError(
                        f"import of {source.value!r} failed: {type(error).__name__}: {error}",
                        **where,
                    )
                )
                return None
        try:
            self.manager.register(
                obj, name=f"{source.distribution}:{source.name}" if source.distribution else None
            )
        except Exception as error:  # pluggy: bad hookimpl signatures, double registration
            self.fail(PluginLoadError(f"could not be registered: {error}", **where))
            return None
        for caller in self.manager.get_hookcallers(obj) or []:
            if not caller.has_spec():
                close = difflib.get_close_matches(caller.name, HOOK_NAMES, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                self.fail(
                    PluginLoadError(
                        f"implements unknown hook {caller.name!r}{hint}; "
                        f"the hooks are: {', '.join(HOOK_NAMES)}",
                        **where,
                    ),
                    obj,
                )
                return None

        manifest = self._manifest(obj, source)
        if manifest is None:
            return None
        where["plugin"] = manifest.name
        config = self.config(manifest.name)
        try:
            tools = self._listed(obj, source, manifest.name, "oracle_tools", Tool, config)
            middleware = self._listed(
                obj, source, manifest.name, "oracle_middleware", Middleware, config
            )
            routes = self._listed(obj, source, manifest.name, "oracle_routes", Route, config)
        except PluginError as error:
            self.fail(error, obj)
            return None
        plugin = Plugin(manifest, source, tools, middleware, routes, config, obj)
        for item in middleware:
            item.plugin = manifest.name
        problem = _check_tools(plugin)
        if problem is not None:
            self.fail(problem, obj)
            return None
        return plugin

    def _manifest(self, obj: Any, source: PluginSource) -> PluginManifest | None:
        where = _where(source.name, source)
        try:
            results = self.call(obj, "oracle_manifest", source)
        except ValidationError as error:
            field, message = describe_validation_error(error)[0]
            self.fail(
                ManifestError(f"manifest field {field!r} {message}", field=field, **where), obj
            )
            return None
        except Exception as error:
            self.fail(
                PluginLoadError(
                    f"hook oracle_manifest raised {type(error).__name__}: {error}", **where
                ),
                obj,
            )
            return None
        if not results:
            self.fail(
                ManifestError(
                    "has no manifest: implement `@hookimpl def oracle_manifest() -> PluginManifest`",
                    **where,
                ),
                obj,
            )
            return None
        if len(results) > 1:
            self.fail(
                ManifestError(
                    f"has {len(results)} oracle_manifest implementations: keep exactly one", **where
                ),
                obj,
            )
            return None
        raw = results[0]
        try:
            if isinstance(raw, PluginManifest):
                raw = raw.model_dump(exclude_unset=True)
            if not isinstance(raw, dict):
                raise TypeError
            manifest = PluginManifest.model_validate(raw)
        except ValidationError as error:
            field, message = describe_validation_error(error)[0]
            self.fail(
                ManifestError(f"manifest field {field!r} {message}", field=field, **where), obj
            )
            return None
        except TypeError:
            self.fail(
                ManifestError(
                    f"oracle_manifest returned {type(results[0]).__name__}: return a PluginManifest",
                    **where,
                ),
                obj,
            )
            return None
        if manifest.version is None and source.version is not None:
            manifest = manifest.model_copy(update={"version": source.version})
        return manifest

    def _listed(
        self, obj: Any, source: PluginSource, name: str, hook: str, kind: type, config: Any
    ) -> list[Any]:
        where = _where(name, source)
        try:
            results = self.call(obj, hook, source, config=config, oracle=self.oracle)
        except Exception as error:
            raise PluginLoadError(
                f"hook {hook} raised {type(error).__name__}: {error}", **where
            ) from error
        items: list[Any] = []
        for result in results:
            if result is None:
                continue
            if not isinstance(result, list | tuple):
                raise PluginLoadError(
                    f"hook {hook} returned {type(result).__name__}: return a list of {kind.__name__}",
                    **where,
                )
            for item in result:
                if not isinstance(item, kind):
                    hint = (
                        " (decorate the function with @tool)"
                        if kind is Tool and callable(item)
                        else ""
                    )
                    raise PluginLoadError(
                        f"hook {hook} returned a {type(item).__name__} where a {kind.__name__} "
                        f"belongs{hint}",
                        **where,
                    )
                items.append(item)
        return items


def _check_tools(plugin: Plugin) -> PluginError | None:
    where = _where(plugin.name, plugin.source)
    names = [t.name for t in plugin.tools]
    for name in names:
        if name in META_TOOL_NAMES:
            return PluginConflictError(
                f"tool {name!r} has the name of a core meta-tool; rename it "
                f"(@tool(name='{plugin.name.replace('-', '_')}_{name}'))",
                **where,
            )
        if names.count(name) > 1:
            return PluginConflictError(f"registers tool {name!r} twice; rename one", **where)
    tools = {t.name: t for t in plugin.tools}
    for index, example in enumerate(plugin.manifest.examples):
        field = f"examples[{index}]"
        target = tools.get(example.tool)
        if target is None:
            known = ", ".join(tools) or "none"
            return ManifestError(
                f"manifest field '{field}.tool' names {example.tool!r}, which is not a tool of "
                f"this plugin (its tools: {known}); name one of them",
                field=f"{field}.tool",
                **where,
            )
        try:
            target.validate(example.args)
        except ToolArgumentsError as error:
            return ManifestError(
                f"manifest field '{field}.args' does not fit {example.tool!r}: {error}; "
                "make the example's args match the tool's parameters",
                field=f"{field}.args",
                **where,
            )
    return None


def _resolve(plugins: list[Plugin], failures: list[PluginError]) -> list[Plugin]:
    """Drop name conflicts and unmet ``depends_on``; the earlier plugin keeps a contested name."""
    kept: list[Plugin] = []
    owners: dict[str, Plugin] = {}
    tool_owners: dict[str, Plugin] = {}
    for plugin in plugins:
        where = _where(plugin.name, plugin.source)
        if plugin.name in owners:
            first = owners[plugin.name]
            failures.append(
                PluginConflictError(
                    f"plugin name {plugin.name!r} is taken by {_origin(first)}; {_origin(plugin)} is "
                    f"left out: uninstall one, or disable one with ORACLE_DISABLE_PLUGINS",
                    **where,
                )
            )
            continue
        clash = next((t.name for t in plugin.tools if t.name in tool_owners), None)
        if clash is not None:
            first = tool_owners[clash]
            failures.append(
                PluginConflictError(
                    f"tool {clash!r} is registered by both {first.name!r} ({_origin(first)}) and "
                    f"{plugin.name!r} ({_origin(plugin)}); {plugin.name!r} is left out: rename the tool "
                    f"in one of them, or disable one with ORACLE_DISABLE_PLUGINS",
                    **where,
                )
            )
            continue
        owners[plugin.name] = plugin
        tool_owners.update({t.name: plugin for t in plugin.tools})
        kept.append(plugin)

    present = {p.name: p for p in kept}
    failed_names = {f.plugin for f in failures}
    for name in _cycle_members(present):
        plugin = present.pop(name)
        failures.append(
            DependencyError(
                f"depends_on forms a cycle through {name!r} ({' -> '.join(_cycle_path(plugin, kept))}): "
                "remove one of the dependencies",
                plugin=name,
                distribution=plugin.source.distribution,
            )
        )
    changed = True
    while changed:
        changed = False
        for name, plugin in list(present.items()):
            missing = [d for d in plugin.manifest.depends_on if d not in present]
            if missing:
                del present[name]
                changed = True
                why = ", ".join(
                    f"{d!r} ({'failed to load' if d in failed_names else 'not installed'})"
                    for d in missing
                )
                failures.append(
                    DependencyError(
                        f"depends_on names {why}: install or fix it, or remove it from depends_on",
                        plugin=name,
                        distribution=plugin.source.distribution,
                    )
                )
                failed_names.add(name)
    return [p for p in kept if p.name in present]


def _origin(plugin: Plugin) -> str:
    src = plugin.source
    return (
        f"distribution {src.distribution!r}"
        if src.distribution
        else f"module {src.value or src.name!r}"
    )


def _cycle_members(plugins: dict[str, Plugin]) -> list[str]:
    """Names of plugins that lie on a ``depends_on`` cycle (Tarjan's strongly connected sets)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    members: list[str] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for dep in plugins[name].manifest.depends_on:
            if dep not in plugins:
                continue
            if dep not in index:
                visit(dep)
                low[name] = min(low[name], low[dep])
            elif dep in on_stack:
                low[name] = min(low[name], index[dep])
        if low[name] == index[name]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == name:
                    break
            if len(group) > 1 or name in plugins[name].manifest.depends_on:
                members.extend(group)

    for name in plugins:
        if name not in index:
            visit(name)
    return [n for n in plugins if n in members]


def _cycle_path(start: Plugin, plugins: list[Plugin]) -> list[str]:
    by_name = {p.name: p for p in plugins}
    path = [start.name]
    current = start
    while True:
        nxt = next((d for d in current.manifest.depends_on if d in by_name), None)
        if nxt is None:
            return path
        path.append(nxt)
        if nxt == start.name or len(path) > len(by_name):
            return path
        current = by_name[nxt]


def assemble(
    candidates: Sequence[Candidate],
    *,
    manager: pluggy.PluginManager,
    config: ConfigLookup,
    trace: bool = False,
    failures: Sequence[PluginError] = (),
    oracle: Any = None,
) -> Registry:
    """Import, register, validate and resolve ``candidates`` into a :class:`Registry`.

    Args:
        candidates: the plugins in registration order.
        manager: the oracle's plugin manager; failed plugins are unregistered from it.
        config: returns a plugin's configuration by name.
        trace: print every hook call to stderr.
        failures: failures found before assembly (e.g. unknown names in ORACLE_LOAD_PLUGINS).
        oracle: the oracle being assembled, passed to hooks that ask for it.
    """
    assembler = _Assembler(manager, config, trace, oracle)
    assembler.failures.extend(failures)
    loaded = [p for p in (assembler.load(c) for c in candidates) if p is not None]
    kept = _resolve(loaded, assembler.failures)
    for plugin in loaded:
        # A plugin left out by a conflict must not run lifecycle hooks either.
        if all(k is not plugin for k in kept) and manager.is_registered(plugin.obj):
            manager.unregister(plugin.obj)
    registry = Registry(plugins={p.name: p for p in kept}, failures=assembler.failures)
    registry.warnings = [w for p in kept for w in manifest_warnings(p.manifest)]
    return registry
