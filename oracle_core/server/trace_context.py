"""The W3C trace context of an HTTP request: its ``traceparent`` becomes the parent of the runs
the request starts (docs/observability.md).

:class:`TraceContextMiddleware` extracts the context with the global propagator
(``traceparent``/``tracestate`` by default) and attaches it while the request is handled, so
a run started by the request (in the request's task, or in a task it creates, which copies
the context) sees it at its start: :class:`~oracle_core.telemetry.tracing.TracingObserver`
takes the current context then as the run span's parent. A request without the header
changes nothing (a look at its headers is all it costs).
"""

from __future__ import annotations

from opentelemetry import context as otel_context
from opentelemetry import propagate
from starlette.types import ASGIApp, Receive, Scope, Send

_WANTED = frozenset({b"traceparent", b"tracestate", b"baggage"})


class TraceContextMiddleware:
    """ASGI middleware attaching the request's incoming trace context while it is handled.

    Args:
        app: the application to wrap.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        carrier = {}
        for name, value in scope.get("headers") or ():  # ASGI header names are lowercase
            if name in _WANTED:
                carrier[name.decode("latin-1")] = value.decode("latin-1")
        if "traceparent" not in carrier:
            await self.app(scope, receive, send)
            return
        token = otel_context.attach(propagate.extract(carrier))
        try:
            await self.app(scope, receive, send)
        finally:
            otel_context.detach(token)
