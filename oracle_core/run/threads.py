"""An in-process cache of the threads this oracle ran on recently.

A turn needs the whole conversation, but reading and decoding every message of a long
thread on every turn makes turns slower as threads grow. The cache keeps the messages (and
their token counts) of recent threads; a run then reads from the store only what was added
since, by this process or any other (:meth:`~oracle_core.store.Checkpointer.load_tail`),
and checks that the start it holds is still the thread's (same length or longer, and the
same last message) before it trusts it. Messages are an append-only log, so a checked
start never goes stale.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from oracle_core.values.messages import Message

DEFAULT_CACHED_THREADS = 128
"""Threads whose messages one oracle keeps in memory between turns."""


@dataclass(frozen=True)
class CachedThread:
    """The start of a thread as a run left it."""

    messages: tuple[Message, ...]
    tokens: tuple[int, ...]


class ThreadCache:
    """The most recently used threads' messages, least recently used dropped first.

    Args:
        size: how many threads to keep (0 keeps none).
    """

    def __init__(self, size: int = DEFAULT_CACHED_THREADS) -> None:
        self.size = size
        self._threads: OrderedDict[str, CachedThread] = OrderedDict()

    def get(self, thread_id: str) -> CachedThread | None:
        """The cached start of ``thread_id``, if any."""
        found = self._threads.get(thread_id)
        if found is not None:
            self._threads.move_to_end(thread_id)
        return found

    def put(self, thread_id: str, messages: list[Message], tokens: list[int]) -> None:
        """Keep ``messages`` (and their counts) as the start of ``thread_id``."""
        if self.size <= 0:
            return
        self._threads[thread_id] = CachedThread(tuple(messages), tuple(tokens))
        self._threads.move_to_end(thread_id)
        while len(self._threads) > self.size:
            self._threads.popitem(last=False)

    def drop(self, thread_id: str) -> None:
        """Forget ``thread_id`` (it was deleted, or its start can no longer be trusted)."""
        self._threads.pop(thread_id, None)
