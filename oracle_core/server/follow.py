"""``GET /threads/{thread_id}/events``: follow a thread's runs as server-sent events.

A follower sees the events of every run on the thread from the moment it subscribed,
whichever process runs them: the store's event channel (``checkpointer.events``) carries
them, within the process for SQLite, through ``LISTEN``/``NOTIFY`` for Postgres. The
stream opens with a ``subscribed`` event (from then on nothing is missed), sends each run
event as ``POST /threads/{id}/runs`` streams it, and pings through silences.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from fastapi import APIRouter, Depends, Query
from starlette.responses import StreamingResponse

from oracle_core.server.context import ServerContext
from oracle_core.server.models import UNAUTHORIZED, ErrorBody
from oracle_core.server.sse import PING, sse_message, sse_response, with_pings
from oracle_core.store.events import FOLLOWER_BACKLOG, EventChannel

_EVENT_TYPE = re.compile(r"[a-z_]{1,40}")


async def follow_stream(
    channel: EventChannel, thread_id: str, ping_seconds: float, *, until_done: bool = False
) -> AsyncIterator[bytes]:
    """The thread's run events as SSE messages, after a ``subscribed`` one.

    Ends after the first ``done`` when ``until_done``, else when the client goes away; a
    follower that fell too far behind gets an ``error`` event (``follower_overflow``).
    """
    async with channel.subscribe(thread_id) as follower:
        yield sse_message({"type": "subscribed", "thread_id": thread_id}, "subscribed")
        async for event in with_pings(follower, ping_seconds):
            if event is None:
                yield PING
                continue
            kind = str(event.get("type") or "")
            yield sse_message(event, kind if _EVENT_TYPE.fullmatch(kind) else "message")
            if until_done and kind == "done":
                return
        # The follower gives None, so ends, only once it was cut off.
        message = (
            f"this follower fell more than {FOLLOWER_BACKLOG} events behind and was cut "
            "off; read the thread (GET /threads/{id}) and follow it again"
        )
        yield sse_message(
            {"type": "error", "error": "follower_overflow", "message": message}, "error"
        )


def follow_router(ctx: ServerContext) -> APIRouter:
    """The follow route; it needs the token like every API route."""
    router = APIRouter(dependencies=[Depends(ctx.auth)], tags=["threads"])

    @router.get(
        "/threads/{thread_id}/events",
        responses={
            200: {"description": "The thread's run events.", "content": {"text/event-stream": {}}},
            401: UNAUTHORIZED,
            422: {"model": ErrorBody, "description": "The thread id is not valid."},
        },
    )
    async def follow_thread(
        thread_id: str, until: str | None = Query(None, pattern="^done$")
    ) -> StreamingResponse:
        """Follow the thread: the events of its runs, from any server process, as they happen.

        The stream opens with a ``subscribed`` event; from then on every event of every run
        on the thread arrives (``run_started`` ... ``done``), whichever process runs it.
        With ``until=done`` it ends after the first run's ``done``.
        """
        ctx.check_thread_id(thread_id)
        channel = ctx.oracle.checkpointer.events
        body = follow_stream(
            channel, thread_id, ctx.limits.sse_ping_seconds, until_done=until == "done"
        )
        return sse_response(body)

    return router
