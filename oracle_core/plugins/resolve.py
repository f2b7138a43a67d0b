"""Resolving assembled plugins against each other: contested names and ``depends_on``.

The earlier plugin (registration order) keeps a contested plugin or tool name, and the
later one is left out naming both owners. ``depends_on`` must name present plugins and form
no cycle (found with :mod:`graphlib`); a plugin whose dependency is missing is left out, and
so, in turn, are the plugins that depend on it.
"""

from __future__ import annotations

import graphlib
from collections.abc import Iterable, Mapping, Sequence

from oracle_core.errors import DependencyError, PluginConflictError, PluginError
from oracle_core.plugins.registry import Plugin


def resolve(plugins: Sequence[Plugin], failures: list[PluginError]) -> list[Plugin]:
    """The plugins that keep their place; a failure is appended for each one left out.

    Args:
        plugins: valid plugins, in registration order.
        failures: the failures so far (plugins that failed to load count as absent); the
            new ones are appended.
    """
    kept = _unique_names(plugins, failures)
    present = {p.name: p for p in kept}
    for name, path in _cycles(present).items():
        plugin = present.pop(name)
        failures.append(
            DependencyError(
                f"depends_on forms a cycle through {name!r} ({' -> '.join(path)}): "
                "remove one of the dependencies",
                plugin=name,
                distribution=plugin.source.distribution,
            )
        )
    failed = {f.plugin for f in failures}
    # Registration order is not dependency order, so a plugin may lose its dependency
    # after it was checked: repeat until nothing changes.
    changed = True
    while changed:
        changed = False
        for name, plugin in list(present.items()):
            missing = [d for d in plugin.manifest.depends_on if d not in present]
            if not missing:
                continue
            del present[name]
            changed = True
            why = ", ".join(
                f"{d!r} ({'failed to load' if d in failed else 'not installed'})" for d in missing
            )
            failures.append(
                DependencyError(
                    f"depends_on names {why}: install or fix it, or remove it from depends_on",
                    plugin=name,
                    distribution=plugin.source.distribution,
                )
            )
            failed.add(name)
    return [p for p in kept if p.name in present]


def dependency_graph(plugins: Iterable[Plugin]) -> dict[str, list[str]]:
    """Each plugin's present dependencies, as :class:`graphlib.TopologicalSorter` takes them."""
    by_name = {p.name: p for p in plugins}
    return {
        name: [d for d in plugin.manifest.depends_on if d in by_name]
        for name, plugin in by_name.items()
    }


def origin(plugin: Plugin) -> str:
    """Where ``plugin`` comes from, for messages: its distribution, else its module."""
    src = plugin.source
    if src.distribution:
        return f"distribution {src.distribution!r}"
    return f"module {src.value or src.name!r}"


def _unique_names(plugins: Sequence[Plugin], failures: list[PluginError]) -> list[Plugin]:
    kept: list[Plugin] = []
    owners: dict[str, Plugin] = {}
    tool_owners: dict[str, Plugin] = {}
    for plugin in plugins:
        if plugin.name in owners:
            first = owners[plugin.name]
            failures.append(
                PluginConflictError(
                    f"plugin name {plugin.name!r} is taken by {origin(first)}; {origin(plugin)} "
                    "is left out: uninstall one, or disable one with ORACLE_DISABLE_PLUGINS",
                    plugin=plugin.name,
                    distribution=plugin.source.distribution,
                )
            )
            continue
        clash = next((t.name for t in plugin.tools if t.name in tool_owners), None)
        if clash is not None:
            first = tool_owners[clash]
            failures.append(
                PluginConflictError(
                    f"tool {clash!r} is registered by both {first.name!r} ({origin(first)}) and "
                    f"{plugin.name!r} ({origin(plugin)}); {plugin.name!r} is left out: rename "
                    "the tool in one of them, or disable one with ORACLE_DISABLE_PLUGINS",
                    plugin=plugin.name,
                    distribution=plugin.source.distribution,
                )
            )
            continue
        owners[plugin.name] = plugin
        tool_owners.update({t.name: plugin for t in plugin.tools})
        kept.append(plugin)
    return kept


def _cycles(plugins: Mapping[str, Plugin]) -> dict[str, list[str]]:
    """Each plugin on a ``depends_on`` cycle, in registration order, with its cycle's path."""
    graph = dependency_graph(plugins.values())
    paths: dict[str, list[str]] = {}
    while True:
        try:
            graphlib.TopologicalSorter(graph).prepare()
        except graphlib.CycleError as error:
            # graphlib lists each node before the one that depends on it, first == last.
            ring = list(reversed(error.args[1][1:]))
            for index, name in enumerate(ring):
                paths[name] = [*ring[index:], *ring[:index], name]
            graph = {n: [d for d in deps if d not in paths] for n, deps in graph.items()}
            continue
        return {n: paths[n] for n in plugins if n in paths}
