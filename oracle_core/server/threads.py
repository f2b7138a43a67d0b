"""``DELETE /threads/{thread_id}``: forget a thread and everything kept for it."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.responses import Response

from oracle_core.server.context import ServerContext
from oracle_core.server.errors import ApiError
from oracle_core.server.models import UNAUTHORIZED, ErrorBody


def threads_router(ctx: ServerContext) -> APIRouter:
    """Thread management beyond reading and running; every route needs the token."""
    router = APIRouter(dependencies=[Depends(ctx.auth)], tags=["threads"])

    @router.delete(
        "/threads/{thread_id}",
        status_code=204,
        responses={
            401: UNAUTHORIZED,
            404: {"model": ErrorBody, "description": "No such thread."},
            409: {"model": ErrorBody, "description": "A run is in progress on the thread."},
            422: {"model": ErrorBody, "description": "The thread id is not valid."},
        },
    )
    async def delete_thread(thread_id: str) -> Response:
        """Delete the thread: its messages, loaded plugins and runs. It cannot be undone.

        A thread with a run in progress is refused with 409; wait for the run to end.
        """
        ctx.check_thread_id(thread_id)
        running = ctx.runs.active(thread_id)
        if running is not None:
            raise ApiError(
                409,
                "thread_busy",
                f"thread {thread_id!r} has a run in progress{f' ({running})' if running else ''}; "
                "delete it once the run has ended",
                {"Retry-After": "1"},
            )
        if not await ctx.oracle.checkpointer.delete(thread_id):
            raise ApiError(404, "thread_not_found", f"no thread {thread_id!r}")
        return Response(status_code=204)

    return router
