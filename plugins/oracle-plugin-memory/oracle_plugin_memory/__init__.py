"""oracle-plugin-memory: durable, per-user memory across conversations.

Memories are kept in the oracle's own SQLite file (``$ORACLE_HOME/oracle.db``, tables
prefixed ``memory_``) and found with SQLite's FTS5 full-text search. The plugin is
``always`` visible: the model sees its tools on every turn, so it can recall what the user
told it in earlier conversations without loading anything first.
"""

from __future__ import annotations

from oracle_core import Example, OracleHandle, PluginHost, PluginManifest, Tool, hookimpl
from oracle_plugin_memory.fts import fts5_missing, fts_query
from oracle_plugin_memory.store import Memory, MemoryStore
from oracle_plugin_memory.tools import MemoryTools

__all__ = [
    "NAME",
    "Memory",
    "MemoryStore",
    "MemoryTools",
    "fts_query",
    "oracle_manifest",
    "oracle_shutdown",
    "oracle_tools",
    "store_of",
]

NAME = "memory"
"""The plugin's manifest name."""


@hookimpl
def oracle_manifest() -> PluginManifest:
    """Describe the memory plugin to the core and the model."""
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


@hookimpl
def oracle_tools(oracle: PluginHost) -> list[Tool]:
    """Return the memory tools, bound to a store in ``oracle``'s own SQLite file.

    The store opens its connection on the first tool call, not here: building an oracle
    (``oracle plugins``, ``oracle prompt``) never touches the database.
    """
    problem = fts5_missing()
    if problem is not None:
        raise RuntimeError(problem)
    store = oracle.plugin_state(NAME).setdefault(
        "store", MemoryStore(oracle.settings.database_path)
    )
    return MemoryTools(store).tools()


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
