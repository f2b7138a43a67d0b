"""The oracle's own HTTP API: threads, runs (JSON or SSE), capabilities, plugins, health and
readiness."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import JSONResponse, Response

from oracle_core.capabilities.meta_tools import list_capabilities
from oracle_core.plugins.deferred import first_use_failures
from oracle_core.server.bodies import RunRequest
from oracle_core.server.context import ServerContext
from oracle_core.server.errors import ApiError
from oracle_core.server.models import (
    UNAUTHORIZED,
    Capability,
    ErrorBody,
    Health,
    Installed,
    Ready,
    RunBody,
    ThreadBody,
    ThreadCreated,
    ThreadList,
)
from oracle_core.server.sse import run_stream, sse_response
from oracle_core.values.ids import check_user_id
from oracle_core.values.messages import public_message
from oracle_core.values.output import OutputSchema
from oracle_core.values.run_options import RunOptions
from oracle_core.version import __version__

log = logging.getLogger("oracle_core.server")

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: UNAUTHORIZED,
    422: {"model": ErrorBody, "description": "The request does not fit (names the field)."},
}


READY_TIMEOUT = 2.0
"""Seconds ``GET /ready`` waits for the store's answer before it says the store is down."""


def health_router(ctx: ServerContext) -> APIRouter:
    """``GET /health`` (liveness) and ``GET /ready`` (readiness): public, so load balancers
    and orchestrators need no token."""
    router = APIRouter(tags=["health"])

    @router.get("/health", response_model=Health)
    async def health() -> dict[str, Any]:
        """The server is up; says whether API requests need a token."""
        return {"status": "ok", "version": __version__, "auth": ctx.auth.enabled}

    @router.get(
        "/ready",
        response_model=Ready,
        responses={503: {"model": Ready, "description": "The store does not answer."}},
    )
    async def ready() -> JSONResponse:
        """Whether the server can serve runs: 200 when its store answers one query within
        two seconds, else 503 (what failed is logged, never shown: the route is public)."""
        try:
            await ctx.oracle.checkpointer.ping(READY_TIMEOUT)
        except Exception as error:  # any failure of the store is "not ready"
            log.warning("GET /ready: the store does not answer: %s", error)
            body = {"status": "unavailable", "store": "the store does not answer; see the log"}
            return JSONResponse(body, status_code=503)
        return JSONResponse({"status": "ready", "store": "ok"})

    return router


def api_router(ctx: ServerContext) -> APIRouter:
    """Threads, runs, capabilities and installed plugins; every route needs the token."""
    router = APIRouter(dependencies=[Depends(ctx.auth)], responses=_ERRORS)
    oracle = ctx.oracle

    @router.post("/threads", status_code=201, response_model=ThreadCreated, tags=["threads"])
    async def create_thread() -> dict[str, str]:
        """Create an empty thread with a fresh id.

        Posting a run to any unused (valid) id creates that thread too.
        """
        thread_id = f"thr_{uuid.uuid4().hex[:20]}"
        await oracle.checkpointer.append(thread_id, base=0)
        return {"thread_id": thread_id}

    @router.get("/threads", response_model=ThreadList, tags=["threads"])
    async def list_threads(limit: Annotated[int, Query(ge=1, le=10_000)] = 100) -> dict[str, Any]:
        """Stored threads, most recently updated first: ``threads`` their ids, ``summaries``
        each with its times, messages, tokens, runs and title (the first words of its first
        user message)."""
        summaries = await oracle.checkpointer.thread_summaries(limit=limit)
        return {
            "threads": [s.thread_id for s in summaries],
            "summaries": [
                {"id": s.thread_id, **{k: v for k, v in s.to_json().items() if k != "thread_id"}}
                for s in summaries
            ],
        }

    @router.get(
        "/threads/{thread_id}",
        response_model=ThreadBody,
        responses={404: {"model": ErrorBody}},
        tags=["threads"],
    )
    async def read_thread(thread_id: str) -> JSONResponse:
        """A thread's messages, loaded plugins, runs (with tokens) and the run in progress."""
        ctx.check_thread_id(thread_id)
        state = await oracle.checkpointer.load(thread_id)
        empty = not (state.messages or state.runs or state.loaded_plugins)
        if empty and thread_id not in await oracle.checkpointer.threads():
            raise ApiError(404, "thread_not_found", f"no thread {thread_id!r}")
        return JSONResponse(
            {
                "thread_id": thread_id,
                "messages": [public_message(m) for m in state.messages],
                "loaded_plugins": state.loaded_plugins,
                "runs": [r.to_json() for r in state.runs],
                "usage": state.usage.as_dict(),
                "active_run": ctx.runs.active(thread_id),
            }
        )

    @router.post(
        "/threads/{thread_id}/runs",
        response_model=RunBody,
        responses={
            200: {
                "description": "The finished run as JSON, or with `stream: true` (or "
                "`Accept: text/event-stream`) its events as server-sent events.",
                "content": {"text/event-stream": {}},
            },
            400: {
                "model": ErrorBody,
                "description": "`output_schema` is not a valid JSON Schema, or is past a "
                "bound of structured output (size, depth, a `$ref` outside it, a pattern).",
            },
            409: {"model": ErrorBody, "description": "A run is already in progress on the thread."},
            413: {"model": ErrorBody, "description": "The body is too large."},
        },
        tags=["runs"],
    )
    async def post_run(thread_id: str, body: RunRequest, request: Request) -> Response:
        """Work a user message to an answer on the thread (created if new).

        A run that fails (the model is down, the step limit is hit) is still a run: it is
        answered with status 200 and ``"status": "failed"`` and its ``error``.
        """
        ctx.check_thread_id(thread_id)
        check_user_id(body.user_id)
        ctx.check_message(body.message)
        streaming = body.stream or "text/event-stream" in request.headers.get("accept", "")
        # A schema that is not JSON Schema, or past a bound of structured output, is a 400
        # (invalid_output_schema), nothing run; checked in a worker thread, off the loop.
        wanted = body.output_schema
        output = None
        if wanted is not None:
            output = await asyncio.to_thread(OutputSchema.from_schema, wanted)
        handle = ctx.runs.start(
            thread_id,
            body.message,
            user_id=body.user_id,
            text_deltas=streaming,
            options=RunOptions(output=output),
        )
        if not streaming:
            return JSONResponse((await handle.result()).to_json())
        first = await handle.next()  # a conflict becomes a 409 before the stream begins
        if first is None:
            raise ApiError(500, "server_error", "the run ended before it started")
        return sse_response(run_stream(handle, first, ctx.limits.sse_ping_seconds))

    @router.get("/capabilities", response_model=list[Capability], tags=["plugins"])
    async def capabilities(thread_id: str | None = None) -> JSONResponse:
        """What ``list_capabilities`` shows the model (``loaded`` as of ``thread_id``)."""
        loaded: list[str] = []
        if thread_id is not None:
            ctx.check_thread_id(thread_id)
            loaded = (await oracle.checkpointer.load(thread_id)).loaded_plugins
        return JSONResponse(json.loads(list_capabilities(oracle.registry, loaded)))

    @router.get("/plugins", response_model=Installed, tags=["plugins"])
    async def plugins() -> dict[str, Any]:
        """Every installed plugin (tier, tools, routes; an MCP server's state, as ``oracle
        plugins`` shows it) and every one that failed to load."""
        from oracle_core.plugins.mcp.adapter import MCPPlugin

        return {
            "model": oracle.model.name,
            "plugins": [
                {
                    "name": p.name,
                    "title": p.manifest.title,
                    "summary": p.manifest.summary,
                    "visibility": p.visibility,
                    "version": p.manifest.version,
                    "category": p.manifest.category,
                    "tags": p.manifest.tags,
                    "tools": [
                        {
                            "name": t.name,
                            "description": t.description,
                            "visibility": t.visibility or p.visibility,
                        }
                        for t in p.tools
                    ],
                    "routes": [
                        {
                            "path": f"/plugins/{p.name}{r.path}",
                            "methods": list(r.methods),
                            "public": r.public,
                        }
                        for r in p.routes
                    ],
                    "mcp": p.obj.status() if isinstance(p.obj, MCPPlugin) else None,
                }
                for p in oracle.registry
            ],
            "failures": [
                {"plugin": f.plugin, "distribution": f.distribution, "error": str(f)}
                for f in [
                    *oracle.registry.failures,
                    *first_use_failures(oracle.registry),  # deferred plugins, at first use
                    *ctx.route_failures,
                ]
            ],
        }

    return router
