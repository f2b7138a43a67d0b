"""HTTP routes to read the trail, served by ``oracle serve`` under ``/plugins/audit/``.

They need the server's bearer token like the core's own routes: the trail holds what users
asked for (tool arguments). Starlette is imported only when a request is answered, so the
plugin loads where the server extra is not installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from oracle_core import Route
from oracle_plugin_audit.store import AuditStore

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

DEFAULT_LIMIT = 50
"""Calls a listing returns when the request gives no ``limit``."""
MAX_LIMIT = 1000
"""The largest ``limit`` a request may ask for."""
_TRUE = ("1", "true", "yes")
_FALSE = ("0", "false", "no")


class BadRequest(ValueError):
    """A query parameter the routes cannot use; the message says which and what fits."""


def _error(status: int, type: str, message: str) -> Response:
    from starlette.responses import JSONResponse

    # The server's own error shape, so one client handles every endpoint's errors alike.
    return JSONResponse({"error": {"type": type, "message": message}}, status_code=status)


def _limit(request: Request) -> int:
    raw = request.query_params.get("limit")
    if raw is None or not raw.strip():
        return DEFAULT_LIMIT
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_LIMIT:
        raise BadRequest(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {raw!r}")
    return value


def _refused(request: Request) -> bool | None:
    raw = request.query_params.get("refused")
    if raw is None or not raw.strip():
        return None
    if raw.strip().lower() in _TRUE:
        return True
    if raw.strip().lower() in _FALSE:
        return False
    raise BadRequest(f"refused must be true or false, not {raw!r}")


class AuditRoutes:
    """The audit routes of one oracle.

    Args:
        store: returns the oracle's audit store when a request comes in (the store is made
            by the ``oracle_middleware`` hook, which the routes cannot see at assembly).
    """

    def __init__(self, store: Callable[[], AuditStore]) -> None:
        self._store = store

    def routes(self) -> list[Route]:
        """``/calls``, ``/tools``, ``/threads/{thread_id}`` and ``/summary``."""
        return [
            Route("/calls", self.calls),
            Route("/tools", self.tools),
            Route("/threads/{thread_id}", self.thread),
            Route("/summary", self.summary),
        ]

    async def calls(self, request: Request) -> Any:
        """``GET /calls?thread_id=&limit=``: model calls, newest first."""
        try:
            limit = _limit(request)
        except BadRequest as error:
            return _error(400, "bad_request", str(error))
        thread_id = request.query_params.get("thread_id") or None
        return {"model_calls": self._store().model_calls(thread_id, limit)}

    async def tools(self, request: Request) -> Any:
        """``GET /tools?thread_id=&refused=&limit=``: tool calls, newest first."""
        try:
            limit, refused = _limit(request), _refused(request)
        except BadRequest as error:
            return _error(400, "bad_request", str(error))
        thread_id = request.query_params.get("thread_id") or None
        return {"tool_calls": self._store().tool_calls(thread_id, refused, limit)}

    async def thread(self, request: Request) -> Any:
        """``GET /threads/{thread_id}``: its model and tool calls, in the order they started."""
        thread_id = str(request.path_params["thread_id"])
        events = self._store().thread(thread_id)
        if not events:
            return _error(404, "not_found", f"the audit trail has no call of thread {thread_id!r}")
        return {"thread_id": thread_id, "events": events}

    async def summary(self, request: Request) -> Any:
        """``GET /summary``: per thread and in total, calls, refusals, errors and tokens."""
        return self._store().summary()
