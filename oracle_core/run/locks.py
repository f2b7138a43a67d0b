"""One run at a time per thread, within this process."""

from __future__ import annotations

import asyncio
import weakref


class ThreadLocks:
    """An :class:`asyncio.Lock` per thread id, kept only while someone holds or waits on it."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def __call__(self, thread_id: str) -> asyncio.Lock:
        """The lock that serializes runs on ``thread_id``."""
        lock = self._locks.get(thread_id)
        if lock is None:
            lock = self._locks[thread_id] = asyncio.Lock()
        return lock

    def busy(self, thread_id: str) -> bool:
        """Whether a run holds the lock of ``thread_id``."""
        lock = self._locks.get(thread_id)
        return lock is not None and lock.locked()
