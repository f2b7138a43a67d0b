"""The hooks a plugin implements, as pluggy hook specifications (project name ``oracle``).

A plugin implements any of them as plain functions decorated with ``@hookimpl``; it may
accept any subset of a hook's parameters, so hooks can gain parameters without breaking
plugins. The core calls each hook per plugin, so it always knows which plugin produced a
result: a plugin never repeats its own name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from oracle_core.manifest import PluginManifest
    from oracle_core.routes import Route
    from oracle_core.run.middleware import Middleware
    from oracle_core.tools import Tool

PROJECT_NAME = "oracle"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Decorator for a plugin's hook implementations: ``@hookimpl def oracle_tools(): ...``."""


@hookspec
def oracle_manifest() -> PluginManifest:  # type: ignore[empty-body]
    """Describe the plugin. Required: exactly one implementation per plugin.

    Called once, synchronously, when the oracle assembles its registry.

    Returns:
        A :class:`~oracle_core.PluginManifest` (a plain ``dict`` of the same fields is
        accepted too). If ``version`` is unset it becomes the distribution's version.
        An invalid manifest leaves the plugin out and is reported naming the field.
    """


@hookspec
def oracle_tools(config: Mapping[str, Any], oracle: Any) -> list[Tool]:  # type: ignore[empty-body]
    """Return the plugin's tools, each made with :func:`~oracle_core.tool`.

    Called once, synchronously, at assembly. Every tool is bound then; the capability gate
    decides per model call which of them the model sees.

    Args:
        config: this plugin's configuration (``[plugins.<name>]`` in ``oracle.toml``).
        oracle: the :class:`~oracle_core.Oracle` being assembled. Its registry is not ready
            yet: keep the reference for later (e.g. ``oracle.settings.database_path``).

    Returns:
        A list of :class:`~oracle_core.Tool`. Tool names must be unique across all plugins
        and must not shadow the meta-tools (``list_capabilities``, ``load_capability``).
    """


@hookspec
def oracle_middleware(config: Mapping[str, Any], oracle: Any) -> list[Middleware]:  # type: ignore[empty-body]
    """Return middleware that observes or changes model calls and tool calls.

    Called once, synchronously, at assembly. Middleware runs after the built-in capability
    gate, in plugin registration order, and in list order within a plugin.

    Args:
        config: this plugin's configuration.
        oracle: the :class:`~oracle_core.Oracle` being assembled (see ``oracle_tools``).

    Returns:
        A list of :class:`~oracle_core.Middleware` instances.
    """


@hookspec
def oracle_routes(config: Mapping[str, Any], oracle: Any) -> list[Route]:  # type: ignore[empty-body]
    """Return HTTP routes, mounted by ``oracle serve`` under ``/plugins/<plugin-name>/``.

    Called once, synchronously, at assembly.

    Args:
        config: this plugin's configuration.
        oracle: the :class:`~oracle_core.Oracle` being assembled (see ``oracle_tools``).

    Returns:
        A list of :class:`~oracle_core.Route`. Routes require the server's bearer token
        unless marked ``public=True``.
    """


@hookspec
def oracle_startup(oracle: Any) -> None:
    """Run once when an oracle starts serving (before its first run or request).

    May be a plain function or a coroutine function; a coroutine is awaited.

    Args:
        oracle: the :class:`~oracle_core.Oracle` that is starting.
    """


@hookspec
def oracle_shutdown(oracle: Any) -> None:
    """Run once when an oracle closes. Sync or async, like :func:`oracle_startup`.

    Args:
        oracle: the :class:`~oracle_core.Oracle` that is closing.
    """
