"""Adding MCP servers to an assembled registry, as plugins like any other.

The servers come from three places, in this order: :class:`~oracle_core.MCPServer` objects
given to ``Oracle(plugins=[...])``, the ``[mcp.<name>]`` tables of ``oracle.toml``, and the
``oracle_mcp_servers`` hook of the plugins that assembled. ``ORACLE_LOAD_PLUGINS`` and
``ORACLE_DISABLE_PLUGINS`` select them by name. Each becomes an
:class:`~oracle_core.plugins.mcp.adapter.MCPPlugin` that goes through the ordinary assembly
(validation, conflicts, the hook timeout), after the installed plugins: a name an installed
plugin already has leaves the server out, reported, never the plugin.

Nothing of the MCP SDK is imported unless a server is defined.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Sequence
from typing import Any

import pluggy

from oracle_core.authoring.host import PluginHost
from oracle_core.errors import PluginConfigError, PluginError, PluginLoadError
from oracle_core.plugins.discovery import PluginSource, did_you_mean, normalize
from oracle_core.plugins.hooks import HookImpls, call_plugin_hook
from oracle_core.plugins.loader import Candidate, assemble
from oracle_core.plugins.mcp.config import MCPServer, servers_from_config
from oracle_core.plugins.registry import Registry
from oracle_core.plugins.resolve import resolve
from oracle_core.plugins.worker import HookTimeout, HookWorker, Progress

MCP_HOOK = "oracle_mcp_servers"

log = logging.getLogger("oracle_core.plugins")


def split_servers(plugins: Sequence[Any]) -> tuple[list[Any], list[MCPServer]]:
    """``Oracle(plugins=...)`` split into plugin objects and MCP server definitions."""
    return (
        [p for p in plugins if not isinstance(p, MCPServer)],
        [p for p in plugins if isinstance(p, MCPServer)],
    )


def add_mcp_servers(
    registry: Registry,
    *,
    manager: pluggy.PluginManager,
    host: PluginHost,
    code: Sequence[MCPServer] = (),
    unmatched_disabled: Sequence[str] = (),
) -> Registry:
    """``registry`` with every MCP server defined for it assembled in, after its plugins.

    Args:
        registry: the assembled plugins.
        manager: the oracle's plugin manager (the servers' plugin objects join it).
        host: what assembly hooks get; its settings give ``oracle.toml`` and the selection.
        code: servers given in code.
        unmatched_disabled: names of ``ORACLE_DISABLE_PLUGINS`` that no installed plugin
            has: each that names no MCP server either is logged as a warning, with the
            nearest name (it disables nothing: a typo would otherwise go unnoticed).

    Returns:
        A new registry (``registry`` itself when no server is defined).
    """
    settings = host.settings
    found, failures = _from_hooks(registry, manager, host)
    configured, errors = servers_from_config(settings.mcp_config(), settings.env)
    servers = [*code, *configured, *found]
    failures = [*errors, *failures]
    _warn_unmatched(unmatched_disabled, registry, servers)
    servers = _selected(servers, settings.load_plugins, settings.disable_plugins)
    # A name of an MCP server is a plugin name: ORACLE_LOAD_PLUGINS may name it.
    names = {normalize(s.name) for s in servers}
    early = [f for f in registry.failures if not _unknown_load_name(f, names)]
    if not servers and not failures:
        return registry
    from oracle_core.plugins.mcp.adapter import MCPPlugin
    from oracle_core.plugins.mcp.listing import ListingCache

    cache = ListingCache(settings.home / "cache" / "mcp")
    taken = frozenset(registry.tools)
    candidates = [
        Candidate(
            PluginSource(name=s.name, value=s.where()),
            MCPPlugin(s, cache, taken=taken),
        )
        for s in servers
    ]
    added = assemble(candidates, manager=manager, host=host, cache=False)
    all_failures: list[PluginError] = [*early, *failures, *added.failures]
    kept = resolve([*registry.plugins.values(), *added.plugins.values()], all_failures)
    kept_ids = {id(p) for p in kept}
    for plugin in added:
        if id(plugin) not in kept_ids:
            manager.unregister(plugin.obj)  # left out: its lifecycle hooks must not run
    names_kept = {p.name for p in kept}
    return Registry(
        plugins={p.name: p for p in kept},
        failures=all_failures,
        warnings=[w for w in [*registry.warnings, *added.warnings] if w.plugin in names_kept],
        core=registry.core,
    )


def _warn_unmatched(names: Sequence[str], registry: Registry, servers: Sequence[MCPServer]) -> None:
    """Log each of ``names`` (``ORACLE_DISABLE_PLUGINS``) that names no server either."""
    known = [*registry.plugins, *(s.name for s in servers)]
    taken = {normalize(n) for n in known}
    for name in names:
        if normalize(name) not in taken:
            log.warning(
                "ORACLE_DISABLE_PLUGINS names %r, but no installed plugin, distribution or MCP "
                "server has that name%s, so it disables nothing: check the spelling "
                "(oracle plugins lists the names)",
                name,
                did_you_mean(name, known),
            )


def _unknown_load_name(failure: PluginError, names: set[str]) -> bool:
    """Whether ``failure`` is ORACLE_LOAD_PLUGINS naming what is in fact an MCP server."""
    return (
        isinstance(failure, PluginLoadError)
        and normalize(failure.plugin) in names
        and str(failure).startswith("ORACLE_LOAD_PLUGINS names")
    )


def _selected(
    servers: Sequence[MCPServer], load: Sequence[str] | None, disable: Sequence[str]
) -> list[MCPServer]:
    wanted = {normalize(n) for n in load} if load is not None else None
    blocked = {normalize(n) for n in disable}
    return [
        s
        for s in servers
        if (wanted is None or normalize(s.name) in wanted) and normalize(s.name) not in blocked
    ]


def _from_hooks(
    registry: Registry, manager: pluggy.PluginManager, host: PluginHost
) -> tuple[list[MCPServer], list[PluginError]]:
    """What each plugin's ``oracle_mcp_servers`` returned (each call under the hook timeout)."""
    impls = HookImpls(manager, [MCP_HOOK])
    shipping = [p for p in registry if impls.of(p.obj, MCP_HOOK)]
    if not shipping:
        return [], []
    servers: list[MCPServer] = []
    failures: list[PluginError] = []
    worker = HookWorker("oracle-mcp-servers")
    try:
        for plugin in shipping:
            job = functools.partial(_call, manager, impls.of(plugin.obj, MCP_HOOK),
                                    plugin.config, host)  # fmt: skip
            try:
                results = worker.run(job, host.settings.hook_timeout)
            except HookTimeout:
                failures.append(_hook_error(plugin.name, f"took longer than "
                                            f"{host.settings.hook_timeout:g} s"))  # fmt: skip
                continue
            except PluginConfigError as error:
                failures.append(error)
                continue
            except Exception as error:
                failures.append(_hook_error(plugin.name, f"raised {type(error).__name__}: {error}"))
                continue
            for result in results:
                items = result if isinstance(result, list | tuple) else [result]
                for item in items:
                    if isinstance(item, MCPServer):
                        servers.append(dataclasses.replace(item, origin=f"plugin {plugin.name!r}"))
                    else:
                        failures.append(
                            _hook_error(plugin.name, f"returned a {type(item).__name__} where an "
                                        "MCPServer belongs: return a list of MCPServer")
                        )  # fmt: skip
    finally:
        worker.close()
    return servers, failures


def _call(
    manager: pluggy.PluginManager,
    impls: list[pluggy.HookImpl],
    config: Any,
    host: PluginHost,
    progress: Progress,
) -> list[Any]:
    progress.enter(MCP_HOOK)
    return call_plugin_hook(manager, MCP_HOOK, impls, {"config": config, "oracle": host})


def _hook_error(plugin: str, what: str) -> PluginLoadError:
    return PluginLoadError(f"hook {MCP_HOOK} {what}; its MCP servers are left out", plugin=plugin)
