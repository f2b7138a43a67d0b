"""The MCP SDK's client for one server: its transport (stdio or streamable HTTP), its
tool listing, and how a failure to start is told.

A stdio server's standard error is read into a log (:data:`CHILD_LOG`), and a transport's
read stream is watched so the end of a server is seen as it happens. The lasting session
built on these, with its restarts, is :class:`~oracle_core.plugins.mcp.connection.ServerConnection`.
Importing this module imports nothing of the SDK.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TextIO

from oracle_core.plugins.mcp.config import MCPServer
from oracle_core.plugins.mcp.listing import Listing, build_listing

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.session import MessageHandlerFnT

_LIST_PAGES = 20
"""Pages of ``tools/list`` read at most: a server that pages forever cannot hang a listing."""


class StartTimeoutError(TimeoutError):
    """The server did not start and list its tools within its ``start_timeout``.

    Told apart from a command that exits or is not found: a server that is only slow (a
    first ``npx``/``uvx`` run downloads its package) needs more time, not another command.
    """

    def __init__(self, definition: MCPServer) -> None:
        super().__init__(start_timed_out(definition))


def start_timed_out(definition: MCPServer) -> str:
    """What to say of ``definition`` not starting within its ``start_timeout``, and the fix."""
    where = definition.where()
    setting = (
        f"start_timeout in {where}" if where.startswith("[") else "MCPServer(start_timeout=...)"
    )
    return (
        f"it did not start within {definition.start_timeout:g} s; raise {setting} if it is "
        "slow to start (a first npx or uvx run may still be downloading its package)"
    )


def describe(error: BaseException) -> str:
    """``error`` in one short line; an exception group (anyio's) by its first leaf."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, StartTimeoutError):
        return str(error)
    if isinstance(error, TimeoutError):
        return "it did not answer in time"
    return f"{type(error).__name__}: {str(error)[:300]}"


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """A streamable HTTP transport whose HTTP client (with the configured headers) closes with it."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


class _EndWatch:
    """A transport's read stream that calls ``on_end`` when the server's end closes.

    It keeps the SDK's ``ReadStream`` protocol; the session reads through it, so the end
    of the stream (a stdio server that exited, a dropped connection) is seen as it happens,
    before any call waiting on the session is told the connection closed.
    """

    def __init__(self, stream: Any, on_end: Callable[[], None]) -> None:
        self._stream = stream
        self._on_end = on_end

    def __getattr__(self, name: str) -> Any:  # ``last_context`` and the like
        return getattr(self._stream, name)

    async def receive(self) -> Any:
        import anyio

        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> _EndWatch:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self._stream.__anext__()
        except (StopAsyncIteration, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _EndWatch:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        result: bool | None = await self._stream.__aexit__(*exc)
        return result


CHILD_LOG = logging.getLogger("oracle_core.plugins.mcp.stderr")
"""Where a stdio server's standard error goes, a line a record at ``DEBUG``: its start-up
banner and chatter stay out of the terminal (``oracle serve --log-level debug`` shows them)."""

_STDERR_LINE = 1000
"""Characters of one standard-error line kept in its log record."""


@asynccontextmanager
async def _stdio(parameters: Any, name: str) -> AsyncIterator[Any]:
    """The SDK's stdio transport, the server's standard error read into :data:`CHILD_LOG`."""
    from mcp.client.stdio import stdio_client

    with _stderr_to_log(name) as errlog:
        async with stdio_client(parameters, errlog=errlog) as streams:
            yield streams


@contextlib.contextmanager
def _stderr_to_log(name: str) -> Iterator[TextIO]:
    """A pipe for a child's standard error; a daemon thread logs each line it writes.

    The thread ends when every writer has closed: the child (and any child of its own) and
    this end, closed when the transport is left.
    """
    read, write = os.pipe()
    writer = os.fdopen(write, "w")

    def pump() -> None:
        with os.fdopen(read, encoding="utf-8", errors="replace") as reader:
            for line in reader:
                if line.strip():
                    CHILD_LOG.debug("MCP server %s: %s", name, line.rstrip()[:_STDERR_LINE])

    threading.Thread(target=pump, name=f"mcp-{name}-stderr", daemon=True).start()
    try:
        yield writer
    finally:
        writer.close()


@asynccontextmanager
async def _watched(transport: Any, on_end: Callable[[], None]) -> AsyncIterator[Any]:
    """``transport`` with its read stream watched for its end (see :class:`_EndWatch`)."""
    async with transport as (read, write):
        yield _EndWatch(read, on_end), write


def new_client(
    definition: MCPServer,
    on_message: MessageHandlerFnT,
    on_end: Callable[[], None] | None = None,
) -> Client:
    """An SDK client for ``definition`` (not entered yet).

    ``on_end`` (when given) is called when the server's end of the transport closes.
    """
    from mcp import Client, StdioServerParameters

    server: Any
    if definition.command:
        server = _stdio(
            StdioServerParameters(
                command=definition.command,
                args=list(definition.args),
                env=dict(definition.env) or None,
                cwd=definition.cwd,
                encoding_error_handler="replace",
            ),
            str(definition.name),
        )
    else:
        assert definition.url is not None
        server = _http_transport(definition.url, dict(definition.headers))
    if on_end is not None:
        server = _watched(server, on_end)
    return Client(
        server,
        mode="legacy",
        cache=None,
        message_handler=on_message,
        read_timeout_seconds=definition.start_timeout,
    )


async def list_tools(client: Client, definition: MCPServer) -> Listing:
    """Every page of ``tools/list``, bounded and checked."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(_LIST_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        tools += [t.model_dump(by_alias=True, exclude_none=True) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    info = client.server_info
    server = f"{info.name} {info.version}".strip() if info is not None else ""
    return build_listing(definition, tools, instructions=client.instructions, server=server)


async def fetch_listing(definition: MCPServer) -> Listing:
    """Start the server, list its tools, stop it (for a server with no cached listing).

    Raises:
        StartTimeoutError: it did not start and list within its ``start_timeout``.
        Exception: whatever else starting or listing raised; the caller names the server.
    """

    async def ignore(message: Any) -> None:
        return None

    try:
        with _deadline(definition.start_timeout):
            async with new_client(definition, ignore) as client:
                return await list_tools(client, definition)
    except TimeoutError:
        raise StartTimeoutError(definition) from None


@contextlib.contextmanager
def _deadline(seconds: float) -> Any:
    import anyio

    with anyio.fail_after(seconds):
        yield
