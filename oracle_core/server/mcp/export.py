"""An oracle served over MCP: ``oracle mcp`` (stdio) and ``/mcp`` on ``oracle serve``.

The MCP server is the SDK's low-level :class:`mcp.server.Server`
(:mod:`~oracle_core.server.mcp.handlers`); its handlers show and call one thread's
model-facing surface (:class:`~oracle_core.server.mcp.surface.ThreadSurface`):
``tools/list`` is what the capability gate shows on the session's thread (meta-tools, the
standing tools, the tools of loaded plugins), and ``tools/call`` runs through the gate, the
middleware and the tool executor like a model's call, so a tool that is not shown is
refused with the gate's own message. After a ``load_capability`` that loaded something, the
server sends ``notifications/tools/list_changed`` (and the prompts' and resources' when the
loaded plugins offer some) and the next list includes what the load shows. Plugins' prompts
and resources (:mod:`~oracle_core.server.mcp.offers`) follow the same rule; a call that must
wait for a person is recorded and settled by :mod:`~oracle_core.server.mcp.waits`;
``logging/setLevel`` forwards what a session's calls log (:mod:`~oracle_core.server.mcp.logs`).

One MCP session is one thread: ``oracle mcp --thread T`` pins the stdio session to ``T``;
an ``/mcp`` request's ``X-Oracle-Thread`` header (the header of the OpenAI-compatible
endpoint) pins its session to that thread, so sessions that name one thread share its loads.
Without a pin each session gets a thread of its own.

Capabilities are declared as the server behaves: ``tools.listChanged`` is true on both
transports (a load sends the notification); ``prompts`` and ``resources`` (with
``listChanged``) only when some plugin offers prompts or resources; ``logging`` always.

Protocol eras: over stdio both are served (a 2026-07-28 client hears of a load through
``subscriptions/listen``). Over HTTP a thread lives as long as an MCP session, which only the
initialize handshake has (protocol revisions up to 2025-11-25), so ``server/discover`` is
answered "not found" (a client in auto mode then falls back to the handshake) and a request
without a session is refused, saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oracle_core.server.mcp.surface import ThreadSurface
from oracle_core.values.ids import THREAD_ID, check_thread_id, check_user_id

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from oracle_core.oracle import Oracle
    from oracle_core.server.mcp.offers import Offers

log = logging.getLogger("oracle_core.plugins.mcp")

MAX_SESSIONS = 1_000
"""Sessions (threads) an HTTP server keeps a surface for; the oldest go first."""

THREAD_HEADER = "X-Oracle-Thread"
"""The header that pins an ``/mcp`` session to a thread (as on ``/v1/chat/completions``)."""


@dataclass
class Session:
    """One MCP session: the surface of its thread, and what it asked to be sent.

    Attributes:
        surface: its thread's surface.
        log_level: the level ``logging/setLevel`` set (``None``: no log is forwarded).
    """

    surface: ThreadSurface
    log_level: str | None = None


class Sessions:
    """Which thread each MCP session works on.

    Args:
        oracle: the oracle served.
        thread_id: the thread of every session (stdio: one session per process); ``None``:
            each session's ``X-Oracle-Thread`` header, else a thread of its own,
            ``mcp-<session id>``.
        user_id: the user the calls run as.
    """

    def __init__(self, oracle: Oracle, thread_id: str | None = None, user_id: str = "default"):
        self.oracle = oracle
        # The rule of every entry (values/ids.py): the CLI's --thread and --user come here.
        self.thread_id = check_thread_id(thread_id) if thread_id is not None else None
        self.user_id = check_user_id(user_id)
        self._sessions: dict[Any, Session] = {}

    def session(self, ctx: Any) -> Session:
        """The session that sent the request ``ctx``.

        Raises:
            MCPError: when the request's ``X-Oracle-Thread`` names another thread than the
                one its session works on.
        """
        key: Any = self.thread_id or _session_id(ctx) or id(ctx.session)
        pinned = pinned_thread(ctx)
        session = self._sessions.get(key)
        if session is None:
            thread = self.thread_id or pinned or (
                f"mcp-{key}" if isinstance(key, str) else f"mcp-{uuid.uuid4().hex[:16]}"
            )  # fmt: skip
            session = Session(ThreadSurface(self.oracle, thread, self.user_id))
            self._sessions[key] = session
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))
        elif pinned is not None and pinned != session.surface.thread_id:
            from mcp.shared.exceptions import MCPError
            from mcp.types import INVALID_REQUEST

            raise MCPError(
                INVALID_REQUEST,
                f"this MCP session works on thread {session.surface.thread_id!r}, and "
                f"{THREAD_HEADER} names {pinned!r}: open a new session to work on another thread",
            )
        return session

    def surface(self, ctx: Any) -> ThreadSurface:
        """The surface of the session that sent the request ``ctx``."""
        return self.session(ctx).surface

    def check_era(self, ctx: Any) -> None:
        """Refuse a sessionless request over HTTP: it would have no thread to work on.

        Raises:
            MCPError: saying to connect with the initialize handshake.
        """
        if self.thread_id is None and _session_id(ctx) is None:
            from mcp.types import INVALID_REQUEST

            raise self.refusal(INVALID_REQUEST)

    def refusal(self, code: int) -> Exception:
        """The error, with JSON-RPC ``code``, that says each session keeps one thread."""
        from mcp.shared.exceptions import MCPError

        return MCPError(code, HANDSHAKE_ONLY)


def _session_id(ctx: Any) -> str | None:
    """The ``Mcp-Session-Id`` of a streamable HTTP request (``None`` on stdio)."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    value = headers.get("mcp-session-id") if headers is not None else None
    # The SDK answers an unknown session id itself; this only keeps the thread id valid.
    if isinstance(value, str) and THREAD_ID.fullmatch(f"mcp-{value}"):
        return value
    return None


def pinned_thread(ctx: Any) -> str | None:
    """The thread an HTTP request's ``X-Oracle-Thread`` names (``None``: none, or stdio).

    The endpoint answers a header that is not a valid thread id with 422 before the SDK
    sees the request; one that gets here anyway is not taken.
    """
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    value = headers.get(THREAD_HEADER.lower()) if headers is not None else None
    return value if isinstance(value, str) and THREAD_ID.fullmatch(value) else None


def mcp_server(sessions: Sessions, offers: Offers | None = None) -> Server[Any]:
    """The SDK server that exposes ``sessions``' surfaces, and ``offers``' prompts and
    resources (see :mod:`~oracle_core.server.mcp.handlers`)."""
    from oracle_core.server.mcp.handlers import build

    return build(sessions, offers)


HANDSHAKE_ONLY = (
    "this oracle keeps one thread per MCP session: connect with the initialize handshake "
    "(protocol 2025-11-25 or earlier)"
)


async def serve_stdio(oracle: Oracle, thread_id: str, user_id: str = "default") -> None:
    """Serve ``oracle`` over MCP on standard input and output until the client hangs up."""
    from mcp.server.stdio import stdio_server

    from oracle_core.server.mcp.offers import Offers

    await oracle.start()
    try:
        offers = await Offers.collect(oracle)
        server = mcp_server(Sessions(oracle, thread_id, user_id), offers)
        options = server.create_initialization_options()
        async with stdio_server() as (read, write):
            await server.run(read, write, options)
    finally:
        await oracle.close()


class HTTPEndpoint:
    """``/mcp`` of ``oracle serve``: the streamable HTTP transport of the SDK, behind the
    server's own bearer-token check and host policy (the app's middleware).

    The SDK (a second or so to import) and its session manager start on the first request
    to ``/mcp``, in a task of their own, so a server that is never asked for MCP pays
    nothing and the manager's task group is entered and left by one task.

    Args:
        oracle: the oracle served.
        check: raises the server's 401 error for a request without an accepted token.
    """

    def __init__(self, oracle: Oracle, check: Any) -> None:
        self.oracle = oracle
        self.check = check
        self.manager: StreamableHTTPSessionManager | None = None
        self._lock: asyncio.Lock | None = None
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._closed = False

    async def _started(self) -> StreamableHTTPSessionManager:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.manager is not None and self._owner is not None and not self._owner.done():
                return self.manager
            if self._closed:
                raise RuntimeError("the server is shutting down")
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

            from oracle_core.server.mcp.offers import Offers

            offers = await Offers.collect(self.oracle)
            manager = StreamableHTTPSessionManager(app=mcp_server(Sessions(self.oracle), offers))
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._stop = stop = asyncio.Event()

            async def own() -> None:
                try:
                    async with manager.run():
                        ready.set_result(None)
                        await stop.wait()
                except BaseException as error:
                    if not ready.done():
                        ready.set_exception(RuntimeError(f"MCP sessions failed: {error}"))
                    raise

            self._owner = asyncio.create_task(own(), name="oracle-mcp-sessions")
            await ready
            self.manager = manager
            return manager

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """For the app's lifespan: the sessions (if any started) end with it."""
        try:
            yield
        finally:
            self._closed = True
            if self._stop is not None:
                self._stop.set()
            if self._owner is not None:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(self._owner, 10)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """The ASGI app at ``/mcp``: the token check and the thread header, then the SDK's
        transport."""
        from starlette.requests import HTTPConnection

        from oracle_core.errors import InvalidThreadIdError
        from oracle_core.server.errors import ApiError, api_error

        if scope["type"] != "http":
            return
        connection = HTTPConnection(scope)
        try:
            self.check(connection)
            thread = connection.headers.get(THREAD_HEADER)
            if thread is not None:
                check_thread_id(thread)  # checked as every thread id the server takes
        except (ApiError, InvalidThreadIdError) as error:
            refusal = error if isinstance(error, ApiError) else api_error(error)
            assert refusal is not None  # the error table answers every OracleError
            await refusal.response()(scope, receive, send)
            return
        manager = await self._started()
        await manager.handle_request(scope, receive, send)

    def route(self) -> Any:
        """The ``/mcp`` route (GET, POST, DELETE as the streamable HTTP transport uses them)."""
        from starlette.routing import Route

        return Route("/mcp", endpoint=self, methods=["GET", "POST", "DELETE"])


def http_endpoint(oracle: Oracle, check: Any) -> HTTPEndpoint | None:
    """The ``/mcp`` endpoint of ``oracle serve``, or ``None`` without ``oracle-core-runtime[mcp]``."""
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        return None
    return HTTPEndpoint(oracle, check)


@asynccontextmanager
async def running(endpoint: HTTPEndpoint | None) -> AsyncIterator[None]:
    """Run ``endpoint``'s sessions for the app's lifespan (nothing when there is none)."""
    if endpoint is None:
        yield
        return
    async with endpoint.running():
        yield
