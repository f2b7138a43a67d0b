"""``GET /usage``: what ``oracle usage --json`` prints, from the store's usage ledger.

Query parameters as the command's options: ``user``, ``since`` (``7d``, ``12h``, ``today``,
``month``, an ISO date or time) and ``by`` (``user``, ``thread``, ``model``, ``plugin``). A
cost is ``null`` when no model call of its group had a known price. Needs the server's token.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from oracle_core.server.context import ServerContext
from oracle_core.server.errors import ApiError
from oracle_core.server.models import UNAUTHORIZED, ErrorBody
from oracle_core.store.usage import GROUPINGS, parse_since, usage_report


def usage_router(ctx: ServerContext) -> APIRouter:
    """``GET /usage``."""
    router = APIRouter(
        dependencies=[Depends(ctx.auth)],
        responses={
            401: UNAUTHORIZED,
            422: {"model": ErrorBody, "description": "A parameter does not fit."},
        },
        tags=["usage"],
    )
    oracle = ctx.oracle

    @router.get("/usage")
    async def usage(
        user: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
        since: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
        by: Annotated[str, Query(max_length=20)] = "user",
    ) -> dict[str, Any]:
        """Tokens, cost, runs and tool calls per user, thread, model or plugin."""
        if by not in GROUPINGS:
            raise ApiError(
                422, "invalid_request", f"by must be one of {list(GROUPINGS)}, not {by[:20]!r}"
            )
        start = None
        if since is not None:
            try:
                start = parse_since(since, time.time())
            except ValueError as error:
                raise ApiError(422, "invalid_request", str(error)) from None
        return await usage_report(oracle.checkpointer, by=by, user_id=user, since=start)  # type: ignore[arg-type]

    return router
