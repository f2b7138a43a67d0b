"""Automatic memory: recall into each model request and capture stated facts, with no tool.

In ``mode = "auto"`` the plugin gives the model no tool and no Tier-1 entry. Instead
:class:`AutoMemory`, on the first model call of each run:

1. searches the user's memories for the words of their latest message and puts the best
   ones, fenced as data and within the token budget, into the request as a system message
   right before that message (earlier messages are untouched, so a provider's prompt cache
   keeps the prefix);
2. then saves the durable facts the message states (:mod:`oracle_plugin_memory.capture`),
   so a fact is recalled from the next run on, never echoed back in the run that said it.

Every read and write names the run's user, so one user's memories never reach another's
requests. Later model calls of the same run get the same block. The thread's saved
messages never hold it: it is part of what is sent, not of the conversation.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from oracle_core import Middleware, ModelRequest
from oracle_plugin_memory.capture import facts
from oracle_plugin_memory.config import MemoryConfig
from oracle_plugin_memory.fts import words
from oracle_plugin_memory.recall import memory_block
from oracle_plugin_memory.store import MemoryStore

log = logging.getLogger("oracle_plugin_memory")

AUTO_TAG = "auto"
"""The tag of every memory the middleware captured (the tools never add it)."""

_RUNS_KEPT = 256
"""Runs whose recalled block is kept for their later model calls."""


def latest_user_text(messages: tuple[Mapping[str, Any], ...]) -> tuple[int, str] | None:
    """The index and text of the last user message, or ``None`` when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return index, content
        if isinstance(content, list):  # content parts: keep the text ones
            parts = [p.get("text") for p in content if isinstance(p, Mapping)]
            return index, " ".join(p for p in parts if isinstance(p, str))
        return index, ""
    return None


class AutoMemory(Middleware):
    """Recalls memories into requests and captures stated facts, for one oracle.

    Args:
        store: the oracle's memory store.
        config: the operator's settings (budget, limit, whether to capture).
    """

    def __init__(self, store: MemoryStore, config: MemoryConfig) -> None:
        self.store = store
        self.config = config
        self._blocks: OrderedDict[str, str] = OrderedDict()

    async def before_model_call(self, request: ModelRequest) -> ModelRequest | None:
        """Put the recalled block before the latest user message (capturing on a run's first call)."""
        latest = latest_user_text(request.messages)
        if latest is None:
            return None
        index, text = latest
        block = self._blocks.get(request.run_id)
        if block is None:
            block = await asyncio.to_thread(self._recall_then_capture, request, text)
            self._blocks[request.run_id] = block
            if len(self._blocks) > _RUNS_KEPT:
                self._blocks.popitem(last=False)
        if not block:
            return None
        messages = request.messages
        recalled = {"role": "system", "content": block}
        return request.replace(messages=(*messages[:index], recalled, *messages[index:]))

    def _recall_then_capture(self, request: ModelRequest, text: str) -> str:
        """Runs on a worker thread: the block for ``text``, then the facts it states saved."""
        # Memory helps a run; it never fails one: a broken database is logged, not raised.
        block = ""
        try:
            if words(text):
                found = self.store.search(request.user_id, text, self.config.recall_limit)
                block = memory_block(found, self.config.recall_tokens)
        except Exception:
            log.exception("memory: recall failed for run %s", request.run_id)
        if self.config.capture:
            try:
                for fact in facts(text):
                    self.store.save(
                        request.user_id,
                        fact.text,
                        (AUTO_TAG,),
                        thread_id=request.thread_id,
                        key=fact.key,
                    )
            except Exception:
                log.exception("memory: capture failed for run %s", request.run_id)
        return block
