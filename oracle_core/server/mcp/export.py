"""An oracle served over MCP: ``oracle mcp`` (stdio) and ``/mcp`` on ``oracle serve``.

The MCP server is the SDK's low-level :class:`mcp.server.Server`; its two handlers show and
call one thread's model-facing surface (:class:`~oracle_core.server.mcp.surface.ThreadSurface`):
``tools/list`` is what the capability gate shows on the session's thread (meta-tools, the
standing tools, the tools of loaded plugins), and ``tools/call`` runs through the gate, the
middleware and the tool executor like a model's call, so a tool that is not shown is
refused with the gate's own message. One MCP session is one thread. After a
``load_capability`` that loaded something, the server sends
``notifications/tools/list_changed`` and the next ``tools/list`` includes the new tools.

Protocol eras: over stdio both are served (a 2026-07-28 client hears of a load through
``subscriptions/listen``). Over HTTP a thread lives as long as an MCP session, which only the
initialize handshake has (protocol revisions up to 2025-11-25), so ``server/discover`` is
answered "not found" (a client in auto mode then falls back to the handshake) and a request
without a session is refused, saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from oracle_core.server.mcp.surface import ThreadSurface
from oracle_core.values.ids import THREAD_ID

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from oracle_core.oracle import Oracle

log = logging.getLogger("oracle_core.plugins.mcp")

MAX_SESSIONS = 1_000
"""Sessions (threads) an HTTP server keeps a surface for; the oldest go first."""


class Sessions:
    """Which thread each MCP session works on.

    Args:
        oracle: the oracle served.
        thread_id: the thread of every session (stdio: one session per process); ``None``:
            each session gets a thread of its own, ``mcp-<session id>``.
        user_id: the user the calls run as.
    """

    def __init__(self, oracle: Oracle, thread_id: str | None = None, user_id: str = "default"):
        self.oracle = oracle
        self.thread_id = thread_id
        self.user_id = user_id
        self._surfaces: dict[Any, ThreadSurface] = {}

    def surface(self, ctx: Any) -> ThreadSurface:
        """The surface of the session that sent the request ``ctx``."""
        key: Any = self.thread_id or _session_id(ctx) or id(ctx.session)
        surface = self._surfaces.get(key)
        if surface is None:
            thread = self.thread_id or (
                f"mcp-{key}" if isinstance(key, str) else f"mcp-{uuid.uuid4().hex[:16]}"
            )
            surface = self._surfaces[key] = ThreadSurface(self.oracle, thread, self.user_id)
            while len(self._surfaces) > MAX_SESSIONS:
                self._surfaces.pop(next(iter(self._surfaces)))
        return surface


def _session_id(ctx: Any) -> str | None:
    """The ``Mcp-Session-Id`` of a streamable HTTP request (``None`` on stdio)."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    value = headers.get("mcp-session-id") if headers is not None else None
    # The SDK answers an unknown session id itself; this only keeps the thread id valid.
    if isinstance(value, str) and THREAD_ID.fullmatch(f"mcp-{value}"):
        return value
    return None


def mcp_server(sessions: Sessions) -> Server[Any]:
    """The SDK server that exposes ``sessions``' surfaces (tools only)."""
    import mcp.types as types
    from mcp.server import NotificationOptions, Server
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
    from mcp.shared.exceptions import MCPError
    from mcp.types import METHOD_NOT_FOUND

    # stdio serves one session, so its changes may go to every listener of the bus.
    bus = InMemorySubscriptionBus() if sessions.thread_id is not None else None

    class _Exported(Server[Any]):
        def get_capabilities(self, notification_options: Any = None, *args: Any, **kw: Any) -> Any:
            # Every session is told that the tool list changes (after each load).
            notification_options = notification_options or NotificationOptions(tools_changed=True)
            return super().get_capabilities(notification_options, *args, **kw)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        _check_era(ctx, sessions)
        tools = await sessions.surface(ctx).tools()
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
                for t in tools
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        _check_era(ctx, sessions)
        result = await sessions.surface(ctx).call(params.name, params.arguments)
        if result.loaded:
            try:
                await ctx.session.send_tool_list_changed()  # handshake era
                if bus is not None:
                    await bus.publish(ToolsListChanged())  # 2026-07-28: subscriptions/listen
            except Exception as error:  # the client went away: the load is saved anyway
                log.info("could not send tools/list_changed: %s", error)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.content)],
            structured_content=_structured(result.content) if not result.is_error else None,
            is_error=result.is_error,
        )

    async def no_discover(ctx: Any, params: Any) -> Any:
        # A 2026-07-28 client then falls back to the initialize handshake: that era has
        # sessions (one thread each) and delivers tools/list_changed on the session.
        raise MCPError(METHOD_NOT_FOUND, HANDSHAKE_ONLY)

    oracle = sessions.oracle
    server = _Exported(
        "oracle",
        version=_version(),
        instructions=oracle.system_prompt,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus) if bus is not None else None,
    )
    if sessions.thread_id is None:  # HTTP: stdio decides its era by the first request
        server.add_request_handler("server/discover", types.RequestParams, no_discover)
    return server


HANDSHAKE_ONLY = (
    "this oracle keeps one thread per MCP session: connect with the initialize handshake "
    "(protocol 2025-11-25 or earlier)"
)


def _check_era(ctx: Any, sessions: Sessions) -> None:
    """Refuse a sessionless request over HTTP: it would have no thread to work on."""
    if sessions.thread_id is None and _session_id(ctx) is None:
        from mcp.shared.exceptions import MCPError
        from mcp.types import INVALID_REQUEST

        raise MCPError(INVALID_REQUEST, HANDSHAKE_ONLY)


def _structured(content: str) -> dict[str, Any] | None:
    """The result as structured content when it is a JSON object (meta-tools answer JSON)."""
    if not content.startswith("{"):
        return None
    try:
        value = json.loads(content)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _version() -> str:
    from oracle_core.version import __version__

    return str(__version__)


async def serve_stdio(oracle: Oracle, thread_id: str, user_id: str = "default") -> None:
    """Serve ``oracle`` over MCP on standard input and output until the client hangs up."""
    from mcp.server import NotificationOptions
    from mcp.server.stdio import stdio_server

    server = mcp_server(Sessions(oracle, thread_id, user_id))
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    await oracle.start()
    try:
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

            manager = StreamableHTTPSessionManager(app=mcp_server(Sessions(self.oracle)))
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
        """The ASGI app at ``/mcp``: the token check, then the SDK's transport."""
        from starlette.requests import HTTPConnection

        from oracle_core.server.errors import ApiError

        if scope["type"] != "http":
            return
        try:
            self.check(HTTPConnection(scope))
        except ApiError as error:
            await error.response()(scope, receive, send)
            return
        manager = await self._started()
        await manager.handle_request(scope, receive, send)

    def route(self) -> Any:
        """The ``/mcp`` route (GET, POST, DELETE as the streamable HTTP transport uses them)."""
        from starlette.routing import Route

        return Route("/mcp", endpoint=self, methods=["GET", "POST", "DELETE"])


def http_endpoint(oracle: Oracle, check: Any) -> HTTPEndpoint | None:
    """The ``/mcp`` endpoint of ``oracle serve``, or ``None`` without ``oracle-core[mcp]``."""
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
