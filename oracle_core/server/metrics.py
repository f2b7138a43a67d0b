"""``GET /metrics``: the oracle's metrics in the Prometheus text format (docs/metrics.md).

It needs the server's token like the rest of the API; a server without tokens answers only
loopback host names (:mod:`oracle_core.server.hosts`), so a scraper reaches it there without
one. The waits pending are counted in the store at each scrape, the rest is what this
process's runs counted since the server started.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from oracle_core.server.context import ServerContext
from oracle_core.server.errors import ApiError
from oracle_core.server.models import UNAUTHORIZED

log = logging.getLogger("oracle_core.server")

MISSING = (
    "metrics need prometheus-client, which this install lacks: "
    "pip install 'oracle-core-runtime[server]'"
)
"""The answer of ``GET /metrics`` when ``prometheus-client`` is not installed."""


def metrics_router(ctx: ServerContext) -> APIRouter:
    """``GET /metrics``; counting starts here, when the app is built, not at the first scrape."""
    router = APIRouter(dependencies=[Depends(ctx.auth)], responses={401: UNAUTHORIZED})
    metrics = ctx.oracle.metrics
    try:
        metrics.prometheus()
        available = True
    except ImportError:
        log.warning("%s; GET /metrics answers 503", MISSING)
        available = False

    @router.get(
        "/metrics",
        tags=["metrics"],
        response_class=Response,
        responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text."}},
    )
    async def scrape(request: Request) -> Response:
        """Every metric of the oracle in the Prometheus text format (``version=0.0.4``), or
        OpenMetrics when the ``Accept`` header asks for it."""
        if not available:
            raise ApiError(503, "metrics_unavailable", MISSING)
        accept = request.headers.get("accept", "")
        body, content_type = await metrics.render(ctx.oracle.checkpointer, accept)
        return Response(body, headers={"Content-Type": content_type})

    return router
