"""The four memory tools, bound to one oracle's :class:`MemoryStore`.

Each oracle builds its own :class:`MemoryTools` in its ``oracle_tools`` hook, so two oracles
never share a connection. The tools act for ``ctx.user_id``: the model cannot name a user,
so it cannot reach another user's memories. They are always shown, so their descriptions
are kept short: they cost tokens on every model call.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from oracle_core import Tool, ToolContext, ToolError, tool
from oracle_plugin_memory.fts import words
from oracle_plugin_memory.store import MemoryStore

MAX_TEXT = 1000
"""Characters a memory may have: a fact, not a document."""


class MemoryTools:
    """The memory tools of one oracle.

    Args:
        store: the oracle's memory store.
    """

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def tools(self) -> list[Tool]:
        """The tools, bound to this object's store, in the order the model sees them."""
        return [
            tool(self.save_memory),
            tool(self.search_memory),
            tool(self.list_memories),
            tool(self.forget_memory),
        ]

    def save_memory(
        self,
        text: Annotated[str, Field(max_length=MAX_TEXT)],
        tags: tuple[str, ...] = (),
        *,
        ctx: ToolContext,
    ) -> dict[str, Any]:
        """Save a lasting fact about the user for later conversations, one fact per call.

        Args:
            text: the fact, self-contained, e.g. "prefers metric units".
            tags: topic words that help find it later.
        """
        fact = text.strip()
        if not fact:
            raise ToolError("text is blank: write the fact to remember")
        memory, created = self.store.save(ctx.user_id, fact, tags, thread_id=ctx.thread_id)
        return {"status": "saved" if created else "already saved", "memory": memory.as_dict()}

    def search_memory(
        self,
        query: str,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
        *,
        ctx: ToolContext,
    ) -> dict[str, Any]:
        """Search the user's saved memories, best matches first.

        Args:
            query: keywords; a memory matching any of them is found.
            limit: the most to return.
        """
        if not words(query):
            raise ToolError(f"query {query!r} has no words to search for: give some keywords")
        found = self.store.search(ctx.user_id, query, limit)
        return {"query": query, "memories": [m.as_dict() for m in found]}

    def list_memories(
        self, limit: Annotated[int, Field(ge=1, le=100)] = 20, *, ctx: ToolContext
    ) -> dict[str, Any]:
        """List the user's saved memories, newest first.

        Args:
            limit: the most to return.
        """
        memories = self.store.recent(ctx.user_id, limit)
        return {"total": self.store.count(ctx.user_id), "memories": [m.as_dict() for m in memories]}

    def forget_memory(self, id: int, *, ctx: ToolContext) -> dict[str, Any]:
        """Delete a saved memory the user wants forgotten or that is no longer true.

        Args:
            id: its id, from search_memory or list_memories.
        """
        memory = self.store.forget(ctx.user_id, id)
        if memory is None:
            raise ToolError(
                f"there is no memory with id {id}: find its id with search_memory or list_memories"
            )
        return {"forgotten": memory.as_dict()}
