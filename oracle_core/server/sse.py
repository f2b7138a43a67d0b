"""Server-sent events: the wire format, and a run's events as a stream.

Each event is ``event: <type>\\ndata: <json>\\n\\n`` where the JSON is the event's
``to_json()`` (its ``type`` included); the last event of a run is ``done``. A ``: ping``
comment line is sent after a stretch of silence, which SSE clients ignore.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any, Protocol, TypeVar

from starlette.responses import StreamingResponse

from oracle_core.server.errors import api_error
from oracle_core.server.runs import RunHandle
from oracle_core.values.events import Event

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

PING = b": ping\n\n"
"""An SSE comment: keeps idle connections open through proxies; clients ignore it."""

HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""Response headers that stop caches and proxies from buffering a stream."""


def sse_message(data: Any, event: str | None = None) -> bytes:
    """One SSE message: an optional ``event:`` line and one ``data:`` line of compact JSON."""
    text = (
        data
        if isinstance(data, str)
        else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    )
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def sse_response(
    body: AsyncIterator[bytes], headers: dict[str, str] | None = None
) -> StreamingResponse:
    """A ``text/event-stream`` response that proxies pass through unbuffered."""
    return StreamingResponse(
        body, media_type="text/event-stream", headers={**HEADERS, **(headers or {})}
    )


class _Source(Protocol[T_co]):
    """What :func:`with_pings` reads: a run's handle, or a thread's follower."""

    async def next(self) -> T_co | None: ...


async def with_pings(source: _Source[T], ping_seconds: float) -> AsyncIterator[T | None]:
    """The source's remaining items (a run's events, say) until its ``next`` gives ``None``;
    ``None`` stands for a stretch of ``ping_seconds`` silence."""
    while True:
        try:
            async with asyncio.timeout(ping_seconds):
                event = await source.next()
        except TimeoutError:
            yield None
            continue
        if event is None:
            return
        yield event


def _messages(events: list[Event]) -> bytes:
    return b"".join(sse_message(e.to_json(), e.type) for e in events)


async def run_stream(handle: RunHandle, first: Event, ping_seconds: float) -> AsyncIterator[bytes]:
    """A run's events as SSE messages, starting with ``first`` (``run_started``); events
    that are already waiting are sent together in one write.

    Should the run break down outside the model's and tools' reach (the store fails, say),
    or the stopping server cancel it, an ``error`` event with a ``message`` ends the stream
    instead of ``done`` (``run_handed_over`` or ``run_cancelled`` for the latter).
    """
    batch = [first, *handle.ready()]
    finished = any(e.type == "done" for e in batch)
    yield _messages(batch)
    try:
        async for event in with_pings(handle, ping_seconds):
            if event is None:
                yield PING
                continue
            # Events that are already waiting go out in one write: fewer syscalls per run.
            batch = [event, *handle.ready()]
            finished = finished or any(e.type == "done" for e in batch)
            yield _messages(batch)
        if not finished:
            raise handle.cancelled()
    except Exception as error:
        answer = api_error(error)
        if answer is not None:
            kind, message = answer.type, answer.message
        else:
            kind, message = "server_error", f"the run broke down: {type(error).__name__}: {error}"
        yield sse_message({"type": "error", "error": kind, "message": message}, "error")
