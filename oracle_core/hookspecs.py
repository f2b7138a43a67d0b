"""The hooks a plugin implements, as pluggy hook specifications (project name ``oracle``).

A plugin implements any of them as plain functions decorated with ``@hookimpl``; it may
accept any subset of a hook's parameters, so hooks can gain parameters without breaking
plugins. The core calls each hook plugin by plugin, through pluggy, so it always knows which
plugin produced a result: a plugin never repeats its own name. A ``wrapper=True``
implementation therefore wraps its own plugin's implementations of the hook, not other
plugins'; one with nothing of its own to wrap is refused when the plugin is registered.

The hooks come in two phases, and what a hook receives is complete for its phase:

- **assembly** (``oracle_manifest``, ``oracle_tools``, ``oracle_middleware``,
  ``oracle_routes``, then ``oracle_mcp_servers``): once, when the :class:`~oracle_core.Oracle` is built; sync only;
  ``oracle`` is a :class:`~oracle_core.authoring.host.PluginHost` (settings and per-oracle plugin
  state; no registry, store or model yet).
- **lifecycle** (``oracle_startup``, ``oracle_shutdown``): when the oracle starts and
  closes; sync or async; ``oracle`` is an :class:`~oracle_core.authoring.host.OracleHandle` (settings,
  plugin state, registry, store and model, all ready).
- **export** (``oracle_prompts``, ``oracle_resources``): once, when the oracle is first
  served over MCP (``oracle mcp``, ``/mcp``), never otherwise; sync only; ``oracle`` is a
  :class:`~oracle_core.authoring.host.PluginHost`, as at assembly.

Every hook runs under a time limit (``ORACLE_HOOK_TIMEOUT``, default 10 s); one that raises
or overruns leaves its plugin out and is reported naming the plugin and the hook.
``ORACLE_TRACE_PLUGINS=1`` prints every hook call and its plugin to stderr.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from oracle_core.authoring.host import OracleHandle, PluginHost
    from oracle_core.authoring.manifest import PluginManifest
    from oracle_core.authoring.mcp import MCPServer
    from oracle_core.authoring.middleware import Middleware
    from oracle_core.authoring.prompts import Prompt, Resource
    from oracle_core.authoring.routes import Route
    from oracle_core.authoring.tools.tool import Tool

PROJECT_NAME = "oracle"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Decorator for a plugin's hook implementations: ``@hookimpl def oracle_tools(): ...``."""


@hookspec
def oracle_manifest(oracle: PluginHost) -> PluginManifest:  # type: ignore[empty-body]
    """Describe the plugin. Required: exactly one implementation per plugin.

    When: once, at assembly (when the :class:`~oracle_core.Oracle` is built), before the
    plugin's other hooks. Sync only; it runs on the assembly worker thread under the hook
    timeout.

    Args:
        oracle: a :class:`~oracle_core.authoring.host.PluginHost` (see ``oracle_tools``), for a
            manifest that depends on the operator's settings (e.g. a plugin whose tier
            follows a mode in ``oracle.settings.plugin_config(name)``). Most plugins take
            no argument.

    Returns:
        A :class:`~oracle_core.PluginManifest` (a plain ``dict`` of the same fields is
        accepted too). If ``version`` is unset it becomes the distribution's version. An
        invalid manifest leaves the plugin out, reported naming every bad field.
    """


@hookspec
def oracle_tools(config: Mapping[str, Any], oracle: PluginHost) -> list[Tool]:  # type: ignore[empty-body]
    """Return the plugin's tools, each made with :func:`~oracle_core.tool`.

    When: once, at assembly, after ``oracle_manifest``. Sync only (an ``async def`` is
    refused at registration). Every tool is bound then; the capability gate decides per
    model call which of them the model sees.

    Args:
        config: this plugin's configuration (``[plugins.<name>]`` in ``oracle.toml``, with
            ``$env`` values and ``ORACLE_PLUGIN_<NAME>__<KEY>`` overrides applied): an
            instance of the config model the manifest declares (``PluginManifest(config=
            MyConfig)``, validated before this hook is called), else a dict.
        oracle: a :class:`~oracle_core.authoring.host.PluginHost`. At assembly it offers
            ``oracle.settings`` (home, database path, ...) and ``oracle.plugin_state(name)``
            (a per-oracle dict that startup, tools and shutdown see too). The registry, the
            store and the model do not exist yet: open connections lazily, or in
            ``oracle_startup``.

    Returns:
        A list of :class:`~oracle_core.Tool`. Tool names must be unique across all plugins
        and must not take a core meta-tool's name, in any letter case
        (:data:`~oracle_core.plugins.core_tools.META_TOOL_NAMES`); each definition must be
        one OpenAI function calling accepts. Any problem leaves the plugin out, naming the
        tool and the fix.
    """


@hookspec
def oracle_middleware(config: Mapping[str, Any], oracle: PluginHost) -> list[Middleware]:  # type: ignore[empty-body]
    """Return middleware that observes or changes model calls and tool calls.

    When: once, at assembly, after ``oracle_tools``. Sync only. Middleware runs after the
    built-in capability gate, in plugin registration order, and in list order within a
    plugin; it runs only if the plugin also starts.

    Args:
        config: this plugin's configuration.
        oracle: a :class:`~oracle_core.authoring.host.PluginHost` (see ``oracle_tools``).

    Returns:
        A list of :class:`~oracle_core.Middleware` instances.
    """


@hookspec
def oracle_routes(config: Mapping[str, Any], oracle: PluginHost) -> list[Route]:  # type: ignore[empty-body]
    """Return HTTP routes, mounted by ``oracle serve`` under ``/plugins/<plugin-name>/``.

    When: once, at assembly, after ``oracle_middleware``. Sync only. The routes answer only
    while the plugin is part of the started oracle (a plugin whose startup failed gets 503).

    Args:
        config: this plugin's configuration.
        oracle: a :class:`~oracle_core.authoring.host.PluginHost` (see ``oracle_tools``). An endpoint
            reaches the running oracle at ``request.app.state.oracle``.

    Returns:
        A list of :class:`~oracle_core.Route`. Routes require the server's bearer token
        unless marked ``public=True``; paths must be plain (no ``.``, ``..``, empty
        segments) and unique within the plugin.
    """


@hookspec
def oracle_mcp_servers(config: Mapping[str, Any], oracle: PluginHost) -> list[MCPServer]:  # type: ignore[empty-body]
    """Ship MCP servers: each becomes an on-demand plugin of its own, named by the server.

    When: once, at assembly, after every plugin's other assembly hooks, for the plugins
    that assembled. Sync only, under the hook timeout. The servers are assembled after the
    installed plugins and the ``[mcp.<name>]`` tables of ``oracle.toml`` (see docs/mcp.md):
    a server whose name is taken is left out, reported, never the plugin that had the name.
    ``ORACLE_LOAD_PLUGINS`` and ``ORACLE_DISABLE_PLUGINS`` select them by that name. A
    server starts only when a thread loads it or its tool is first called.

    Args:
        config: this plugin's configuration (e.g. a token to put in a server's ``env``
            or ``headers``).
        oracle: a :class:`~oracle_core.authoring.host.PluginHost` (see ``oracle_tools``).

    Returns:
        A list of :class:`~oracle_core.MCPServer` (a stdio ``command`` or an HTTP ``url``,
        and optional manifest fields). Anything else is reported naming this plugin, and
        its servers are left out.
    """


@hookspec
def oracle_prompts(config: Mapping[str, Any], oracle: PluginHost) -> list[Prompt]:  # type: ignore[empty-body]
    """Offer prompt templates to MCP clients: a person picks one, the oracle renders it.

    When: once, the first time the oracle is served over MCP (``oracle mcp``, or the first
    request to ``/mcp`` of ``oracle serve``), for the plugins that assembled; never when the
    oracle is not served over MCP. Sync only (an ``async def`` is refused at registration),
    on the hook worker, under the hook timeout. A hook that raises or overruns, or returns
    anything but prompts, leaves this plugin's prompts out, logged naming the plugin and the
    hook; the plugin and its tools stay.

    The prompts follow the capability gate's rule for tools: those of an ``always`` or
    ``silent`` plugin are listed to every session at once; those of an ``on-demand`` plugin
    only once the session's thread loaded it (``load_capability``). A ``prompts/get`` of a
    prompt the session is not shown is refused like a hidden tool's call.

    Args:
        config: this plugin's configuration.
        oracle: a :class:`~oracle_core.authoring.host.PluginHost` (see ``oracle_tools``).

    Returns:
        A list of :class:`~oracle_core.Prompt`. Names must be unique across all plugins: a
        prompt whose name an earlier plugin's prompt has is left out, reported naming both.
    """


@hookspec
def oracle_resources(config: Mapping[str, Any], oracle: PluginHost) -> list[Resource]:  # type: ignore[empty-body]
    """Offer documents MCP clients may read by URI (``resources/list``, ``resources/read``).

    When: once, the first time the oracle is served over MCP, as ``oracle_prompts``. Sync
    only, on the hook worker, under the hook timeout; a hook that raises, overruns or
    returns anything but resources leaves this plugin's resources out, logged naming the
    plugin and the hook.

    The resources follow the capability gate's rule for tools (as ``oracle_prompts``): an
    ``on-demand`` plugin's are listed and readable only once the session's thread loaded
    it; a read of one the session is not shown is refused like a hidden tool's call.

    Args:
        config: this plugin's configuration.
        oracle: a :class:`~oracle_core.authoring.host.PluginHost` (see ``oracle_tools``).

    Returns:
        A list of :class:`~oracle_core.Resource`. URIs must be unique across all plugins: a
        resource whose URI an earlier plugin's resource has is left out, reported naming both.
    """


@hookspec
def oracle_startup(oracle: OracleHandle) -> None:
    """Prepare the plugin for work: open connections, warm caches, start background tasks.

    When: once, when the oracle starts (before its first run or request), in dependency
    order (``depends_on`` first, then registration order), so a plugin's dependencies have
    started before it. A plain function runs on a worker thread; a coroutine function is
    awaited on the oracle's event loop (use ``async def`` to touch the loop). The oracle
    counts as started only once every startup hook returned. A hook that raises or
    overruns the timeout leaves its plugin out (with its tools, middleware and routes, and
    the plugins that depend on it); with ``ORACLE_STRICT_PLUGINS=1`` it is fatal.

    Args:
        oracle: the starting oracle as an :class:`~oracle_core.authoring.host.OracleHandle`:
            ``settings``, ``plugin_state(name)``, ``checkpointer`` and ``model`` are ready;
            ``registry`` holds the assembled plugins (plugins that fail to start are removed
            from it once startup ends). Do not run the oracle (``run``/``stream``) from a
            startup hook: it is not started yet.

    Returns:
        Nothing; a return value is ignored.
    """


@hookspec
def oracle_shutdown(oracle: OracleHandle) -> None:
    """Release what ``oracle_startup`` or the tools opened.

    When: once, when the oracle closes, only for plugins whose startup succeeded, in the
    reverse of startup order. Sync (on a worker thread) or async (awaited), under the hook
    timeout. An error is logged naming the plugin and never stops the other shutdowns.

    Args:
        oracle: the closing oracle as an :class:`~oracle_core.authoring.host.OracleHandle`:
            ``settings``, ``plugin_state(name)``, ``registry`` (the started plugins),
            ``checkpointer`` and ``model``. No new runs start once shutdown has begun.

    Returns:
        Nothing; a return value is ignored.
    """
