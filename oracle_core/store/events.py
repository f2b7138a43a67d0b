"""A thread's run events, fanned out to whoever follows the thread.

Every store offers an :class:`EventChannel` (``Checkpointer.events``): the oracle publishes
each event of a run to it as the run goes, and a follower (the server's
``GET /threads/{id}/events``) subscribes to a thread and receives the events of every run
on it. The default channel fans out within the process; the Postgres store's channel goes
through ``LISTEN``/``NOTIFY``, so a follower connected to one server process sees the runs
of every process sharing the database.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

from oracle_core.values.text import clean_text

FOLLOWER_BACKLOG = 10_000
"""Events one follower may have waiting; a follower that falls further behind is cut off."""


class Publishable(Protocol):
    """What a channel publishes: an event with its JSON form (``run/events.py``'s ``Event``)."""

    @property
    def type(self) -> str:
        """The event's type (``done`` for the last event of a run)."""
        ...

    def to_json(self) -> dict[str, Any]:
        """The event as JSON-ready data, its ``type`` included."""
        ...


class Follower:
    """One subscription to a thread's events: iterate it, or call :meth:`next`.

    Attributes:
        thread_id: the (cleaned) thread followed.
        overflowed: whether events were dropped because this follower fell behind by more
            than :data:`FOLLOWER_BACKLOG`; it then ends.
    """

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.overflowed = False
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(FOLLOWER_BACKLOG)

    def deliver(self, event: dict[str, Any]) -> None:
        """Queue an event for this follower (called by the channel)."""
        if self.overflowed:
            return
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.overflowed = True
            self._queue.get_nowait()
            self._queue.put_nowait(None)  # the end, where the follower will see it next

    async def next(self) -> dict[str, Any] | None:
        """The next event as JSON data; ``None`` once the follower was cut off."""
        return await self._queue.get()

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._events()

    async def _events(self) -> AsyncIterator[dict[str, Any]]:
        while (event := await self.next()) is not None:
            yield event


class EventChannel:
    """Fans each published event out to the followers of its thread, in this process.

    Publishing never waits and costs nothing when nobody follows the thread.
    """

    def __init__(self) -> None:
        self._followers: dict[str, set[Follower]] = {}

    def publish(self, thread_id: str, event: Publishable) -> None:
        """Hand ``event`` of a run on ``thread_id`` to the thread's followers (never waits)."""
        thread_id = clean_text(thread_id)
        if self.following(thread_id):
            self.deliver(thread_id, event.to_json())

    def deliver(self, thread_id: str, data: dict[str, Any]) -> None:
        """Hand already-encoded event ``data`` to the local followers of ``thread_id``."""
        for follower in list(self._followers.get(thread_id, ())):
            follower.deliver(data)

    def following(self, thread_id: str) -> bool:
        """Whether anyone in this process follows ``thread_id`` (cleaned)."""
        return bool(self._followers.get(thread_id))

    @contextlib.asynccontextmanager
    async def subscribe(self, thread_id: str) -> AsyncIterator[Follower]:
        """Follow ``thread_id`` while the block runs; events published from then on arrive."""
        follower = Follower(clean_text(thread_id))
        await self._added(follower)
        try:
            yield follower
        finally:
            await self._removed(follower)

    async def _added(self, follower: Follower) -> None:
        self._followers.setdefault(follower.thread_id, set()).add(follower)

    async def _removed(self, follower: Follower) -> None:
        followers = self._followers.get(follower.thread_id)
        if followers is not None:
            followers.discard(follower)
            if not followers:
                del self._followers[follower.thread_id]

    async def close(self) -> None:
        """Stop delivering (nothing to release in process)."""
        return None
