"""oracle-plugin-memory: durable, per-user memory across conversations.

Memories are kept in the oracle's own SQLite file (``$ORACLE_HOME/oracle.db``, tables
prefixed ``memory_``) and found with SQLite's FTS5 full-text search. Two modes, chosen by
the operator in ``[plugins.memory]`` (see :mod:`oracle_plugin_memory.config`):

- ``mode = "tools"`` (default): the plugin is ``always`` visible; the model sees its four
  tools and its Tier-1 entry on every turn and saves and searches memories itself.
- ``mode = "auto"``: the plugin is ``silent`` and has no tools; its middleware
  (:class:`~oracle_plugin_memory.middleware.AutoMemory`) recalls the memories relevant to
  each user message into the request and captures the facts the user states. The model
  gets memory for zero tool schemas and zero Tier-1 tokens.
"""

from __future__ import annotations

from typing import Any

from oracle_core import (
    Example,
    Middleware,
    OracleHandle,
    PluginHost,
    PluginManifest,
    Tool,
    hookimpl,
)
from oracle_plugin_memory.capture import Fact, facts
from oracle_plugin_memory.config import MemoryConfig
from oracle_plugin_memory.fts import fts5_missing, fts_query
from oracle_plugin_memory.middleware import AutoMemory
from oracle_plugin_memory.recall import memory_block
from oracle_plugin_memory.store import Memory, MemoryStore
from oracle_plugin_memory.tools import MemoryTools

__all__ = [
    "NAME",
    "AutoMemory",
    "Fact",
    "Memory",
    "MemoryConfig",
    "MemoryStore",
    "MemoryTools",
    "config_of",
    "facts",
    "fts_query",
    "memory_block",
    "oracle_manifest",
    "oracle_middleware",
    "oracle_shutdown",
    "oracle_tools",
    "store_of",
]

NAME = "memory"
"""The plugin's manifest name."""


def config_of(oracle: PluginHost | OracleHandle | None) -> MemoryConfig:
    """The operator's settings for the plugin in ``oracle`` (defaults without one).

    Raises:
        ValueError: when ``[plugins.memory]`` has a bad key or value, naming it.
    """
    if oracle is None:
        return MemoryConfig()
    return MemoryConfig.from_mapping(oracle.settings.plugin_config(NAME))


@hookimpl
def oracle_manifest(oracle: PluginHost | None) -> PluginManifest:
    """Describe the memory plugin: ``always`` with tools, or ``silent`` in auto mode.

    The tier follows the operator's ``mode``, so in auto mode the plugin honestly has no
    Tier-1 entry, is never listed or found, and shows the model nothing.
    """
    if config_of(oracle).auto:
        return PluginManifest(
            name=NAME,
            title="Memory",
            summary="Durable memory across conversations, recalled and saved automatically.",
            visibility="silent",
            tags=["memory", "remember", "preferences", "personal"],
            category="personal",
        )
    return PluginManifest(
        name=NAME,
        title="Memory",
        summary="Durable memory across conversations.",
        visibility="always",
        when_to_use=[
            "the user refers to an earlier conversation",
            "you learn a lasting fact or preference",
            "the user asks you to remember or forget something",
        ],
        when_not_to_use=["details that only matter in this conversation"],
        examples=[
            Example(
                user="remember I prefer metric units",
                tool="save_memory",
                args={"text": "prefers metric units"},
            ),
            Example(
                user="what did I say about my diet last time?",
                tool="search_memory",
                args={"query": "diet food allergy"},
            ),
            Example(user="forget that I live in Leeds", tool="forget_memory", args={"id": 12}),
        ],
        tags=["memory", "remember", "preferences", "personal"],
        category="personal",
    )


def _store(oracle: PluginHost) -> MemoryStore:
    """The oracle's memory store, made on first use (it opens its connection lazily)."""
    problem = fts5_missing()
    if problem is not None:
        raise RuntimeError(problem)
    store: MemoryStore = oracle.plugin_state(NAME).setdefault(
        "store", MemoryStore(oracle.settings.database_path)
    )
    return store


@hookimpl
def oracle_tools(config: Any, oracle: PluginHost) -> list[Tool]:
    """Return the memory tools, bound to a store in ``oracle``'s own SQLite file.

    In auto mode there are none: the model is shown no memory tool at all.

    The store opens its connection on the first tool call, not here: building an oracle
    (``oracle plugins``, ``oracle prompt``) never touches the database.
    """
    if MemoryConfig.from_mapping(config).auto:
        return []
    return MemoryTools(_store(oracle)).tools()


@hookimpl
def oracle_middleware(config: Any, oracle: PluginHost) -> list[Middleware]:
    """In auto mode, the middleware that recalls and captures memories; else none."""
    settings = MemoryConfig.from_mapping(config)
    if not settings.auto:
        return []
    return [AutoMemory(_store(oracle), settings)]


@hookimpl
def oracle_shutdown(oracle: OracleHandle) -> None:
    """Close the oracle's memory connection."""
    store = store_of(oracle)
    if store is not None:
        store.close()


def store_of(oracle: PluginHost | OracleHandle) -> MemoryStore | None:
    """The memory store of ``oracle`` (``None`` when the plugin is not part of it).

    It lives in ``oracle.plugin_state("memory")``, so each oracle's state is its own and
    nothing is kept at module level.
    """
    store = oracle.plugin_state(NAME).get("store")
    return store if isinstance(store, MemoryStore) else None
