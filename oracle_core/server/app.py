"""``create_app``: the FastAPI application that serves one oracle."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.types import ASGIApp

from oracle_core.server.api import api_router, health_router
from oracle_core.server.auth import BearerAuth
from oracle_core.server.connections import connections_router
from oracle_core.server.context import ServerContext
from oracle_core.server.docs_pages import docs_mount, docs_router
from oracle_core.server.errors import install_error_handlers
from oracle_core.server.follow import follow_router
from oracle_core.server.hosts import HostGuardMiddleware, HostPolicy
from oracle_core.server.limits import BodyLimitMiddleware, Limits
from oracle_core.server.mcp.export import http_endpoint as mcp_http_endpoint
from oracle_core.server.mcp.export import running as mcp_sessions
from oracle_core.server.metrics import metrics_router
from oracle_core.server.openai_compat import openai_router
from oracle_core.server.openai_responses import responses_router
from oracle_core.server.operations import operations_router
from oracle_core.server.page import page_router, static_mount
from oracle_core.server.plugin_routes import plugin_routes
from oracle_core.server.request_id import RequestIdMiddleware
from oracle_core.server.security import SecurityHeadersMiddleware
from oracle_core.server.threads import threads_router
from oracle_core.server.trace_context import TraceContextMiddleware
from oracle_core.server.usage import usage_router
from oracle_core.version import __version__

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle

OPENAPI_URL = "/openapi.json"
"""Where the app's OpenAPI document is served (the docs pages at ``/docs`` and ``/redoc`` read it)."""

DESCRIPTION = """An oracle served over HTTP: threads and runs (JSON or server-sent events), an
OpenAI-compatible `/v1/chat/completions`, plugin routes under `/plugins/<name>/`, MCP
(streamable HTTP) at `/mcp`, a chat page at `/`, and this reference at `/docs` and `/redoc`. Send `Authorization: Bearer <token>`
when the server has tokens."""


def create_app(
    oracle: Oracle,
    *,
    tokens: Iterable[str] | str = (),
    limits: Limits | None = None,
    chat_page: bool = True,
    allowed_hosts: Iterable[str] | str | None = None,
) -> FastAPI:
    """Build the HTTP application serving ``oracle``.

    Starting the app (its lifespan) runs every plugin's ``oracle_startup`` hook once and,
    unless ``ORACLE_RESUME_RUNS=0``, starts resuming the runs cut off by the end of their
    process (:meth:`~oracle_core.Oracle.resume_cut_off_runs`); stopping it cancels the runs still in progress (each saved as ``cancelled``), runs the
    ``oracle_shutdown`` hooks and closes the oracle's store.

    Every response carries the security headers of :mod:`oracle_core.server.security`, and
    a request whose ``Host`` the server does not answer to is refused (421) before any
    route sees it: without tokens only loopback names are answered (against DNS rebinding).
    Every request has an id (``X-Request-ID``, :mod:`oracle_core.server.request_id`) that
    its log lines and the lines of the runs it starts carry, and its response sends back.

    Args:
        oracle: the oracle to serve.
        tokens: accepted bearer tokens (a string is read as comma-separated tokens); empty:
            no authentication (bind to loopback only).
        limits: request limits; default :class:`Limits`.
        chat_page: serve the chat page at ``/``.
        allowed_hosts: with tokens, the ``Host`` names to answer to (a string is read as
            comma-separated; ``*.example.com`` for subdomains); ``None``: any name.

    Returns:
        The FastAPI app; ``app.state.oracle`` and ``app.state.server`` (a
        :class:`~oracle_core.server.context.ServerContext`) are set for plugin endpoints.

    A plugin whose routes are bad or clash is reported (``ServerContext.route_failures``,
    ``GET /plugins``, the log) and served without routes; the rest of the server goes on.

    Raises:
        ValueError: ``allowed_hosts`` is given without tokens, or names no host.
    """
    auth = BearerAuth(tokens)
    hosts = HostPolicy.for_server(token=auth.enabled, allowed_hosts=allowed_hosts)
    ctx = ServerContext(oracle, auth, limits or Limits(), hosts)
    mcp = mcp_http_endpoint(oracle, auth.check)  # /mcp; None without oracle-core-runtime[mcp]

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        sweeper = oracle.resume_cut_off_runs()  # None with ORACLE_RESUME_RUNS=0
        await oracle.start()
        if sweeper is not None:
            sweeper.start()  # stopped when the oracle closes
        try:
            async with mcp_sessions(mcp):
                yield
        finally:
            await ctx.runs.cancel_all()
            await oracle.close()

    app = _GuardedApp(
        title="oracle",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served by docs_pages.py, from the package's own files
        redoc_url=None,
        openapi_url=OPENAPI_URL,
    )
    app.state.oracle = oracle
    app.state.server = ctx
    install_error_handlers(app)
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=ctx.limits.max_body_bytes,
        timeout_seconds=ctx.limits.body_timeout_seconds,
    )
    app.add_middleware(TraceContextMiddleware)  # an incoming traceparent parents the runs
    app.router.routes.append(docs_mount())
    routers = [
        docs_router(app.title, OPENAPI_URL),
        health_router(ctx),
        api_router(ctx),
        threads_router(ctx),
        openai_router(ctx),
        responses_router(ctx),
    ]
    routers.append(connections_router(ctx))
    routers.append(operations_router(ctx))
    routers.append(usage_router(ctx))
    routers.append(follow_router(ctx))
    routers.append(metrics_router(ctx))
    if chat_page:
        routers.append(page_router(ctx))
        app.router.routes.append(static_mount())
    for router in routers:
        app.include_router(router)
    if mcp is not None:
        app.router.routes.append(mcp.route())
    core = [*app.router.routes, *(route for router in routers for route in router.routes)]
    mounted = plugin_routes(oracle.registry, ctx.auth, core)
    app.router.routes.extend(mounted.routes)
    ctx.route_failures = mounted.failures
    return app


class _GuardedApp(FastAPI):
    """FastAPI with the request id, the host check and the security headers outside every
    other layer.

    ``add_middleware`` would put them inside Starlette's error middleware, whose 500s would
    then go out without the headers (and its traceback's log line without the request id).
    """

    def build_middleware_stack(self) -> ASGIApp:
        ctx: ServerContext = self.state.server
        guarded = HostGuardMiddleware(super().build_middleware_stack(), ctx.hosts)
        return RequestIdMiddleware(SecurityHeadersMiddleware(guarded))
