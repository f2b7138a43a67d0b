"""One connection to an MCP server, through the official SDK's :class:`mcp.Client`.

The connection starts its server on first need (a call, or a load of its plugin), keeps
one session open, and hands calls to it from any task of the event loop. A server that
exits while idle is seen at once (its transport ends) and restarted by the next call, which
then runs on the new session; one that exits during a call fails that call (it may have
run: it is never sent twice) and is restarted by the next. Restarts wait a backoff that
doubles with each failure in a row; after ``max_restarts`` of them the server counts as
failed and its calls are tool errors naming it. ``notifications/tools/list_changed`` makes
it list the tools again and tell its listener. Closing it stops the server, also one that
is still starting.

The session uses the initialize handshake (``mode="legacy"``), which every server of the
2025 protocol revisions speaks, so change notifications arrive on the session itself. The
SDK client and its transports are made in :mod:`~oracle_core.plugins.mcp.client`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from oracle_core.errors import ToolError
from oracle_core.plugins.mcp.client import (
    StartTimeoutError,
    describe,
    fetch_listing,
    list_tools,
    new_client,
    start_timed_out,
)
from oracle_core.plugins.mcp.config import MCPServer
from oracle_core.plugins.mcp.listing import Listing

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult

# StartTimeoutError, describe and fetch_listing are imported from here by the adapter
# and the tests, from before the SDK client had a module of its own.
__all__ = [
    "MAX_BACKOFF",
    "ListingListener",
    "ServerConnection",
    "StartTimeoutError",
    "State",
    "describe",
    "fetch_listing",
]

log = logging.getLogger("oracle_core.plugins.mcp")

State = Literal["idle", "starting", "running", "crashed", "failed", "stopped"]
"""Where a server is: not started yet, starting, running, exited (restarts on the next
call), failed (too many restarts in a row: left out until the oracle is rebuilt), stopped."""

MAX_BACKOFF = 30.0
"""The longest wait before a restart, however many failures came before."""

ListingListener = Callable[[Listing], Awaitable[None]]


class ServerConnection:
    """A lazily started, restarted-on-crash session with one MCP server.

    Args:
        definition: the server.
        listing: its tools as the oracle was built with them (from the cache or a fetch).
        on_listing: told about each new listing (after ``tools/list_changed``).
    """

    def __init__(
        self,
        definition: MCPServer,
        listing: Listing,
        on_listing: ListingListener | None = None,
    ) -> None:
        self.definition = definition
        self.listing = listing
        self.on_listing = on_listing
        self.state: State = "idle"
        self.error: str | None = None
        self.restarts = 0
        self.starts = 0
        self._failures = 0
        self._failed_at = 0.0
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[Client] | None = None
        self._calling = 0  # calls waiting on the session, to say how the server ended
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._dirty = False
        self._relisting: asyncio.Task[None] | None = None
        self.generation = 0
        """How many times the server's tool listing changed since the oracle was built."""
        self._next: asyncio.Event | None = None

    @property
    def name(self) -> str:
        """The server's (and its plugin's) name."""
        return self.definition.name

    def status(self) -> dict[str, Any]:
        """The server's state for ``oracle plugins`` and logs (never its secrets)."""
        return {
            "state": self.state,
            "transport": self.definition.transport,
            "tools": len(self.listing.tools),
            "starts": self.starts,
            "restarts": self.restarts,
            "error": self.error,
        }

    async def start(self) -> None:
        """Start the server now if it is not running (a failed one is not retried).

        Raises:
            ToolError: naming the server, when it cannot be started.
        """
        await self._session()

    async def call(self, remote: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call the server's tool ``remote`` with ``arguments`` (already validated).

        Raises:
            ToolError: naming the server, when it is down, fails to answer in time, exits
                during the call, or answers with something that is not a tool result.
        """
        client = await self._session()
        timeout = self.definition.timeout
        self._calling += 1
        try:
            async with asyncio.timeout(timeout + 1):
                result = await client.call_tool(remote, arguments, read_timeout_seconds=timeout)
        except TimeoutError:
            raise ToolError(
                f"MCP server {self.name!r} did not answer {remote!r} within {timeout:g} s"
            ) from None
        except Exception as error:
            if self._closed(error):
                if self._client is client:  # its transport did not end first: end it here
                    await self._crashed(f"it exited during a call of {remote!r}")
                raise ToolError(
                    f"MCP server {self.name!r} exited during the call; it will be restarted "
                    "on the next call"
                ) from None
            raise ToolError(
                f"MCP server {self.name!r} answered {remote!r} with an error or an invalid "
                f"result ({describe(error)})"
            ) from None
        finally:
            self._calling -= 1
        self._failures = 0
        return result

    async def next_listing(self, after: int) -> int:
        """Wait until the listing changed more than ``after`` times; the new generation."""
        while self.generation <= after:
            if self._next is None:
                self._next = asyncio.Event()
            await self._next.wait()
        return self.generation

    async def close(self) -> None:
        """Stop the server (if running) and every task of this connection; no call restarts it."""
        self.state = "stopped"
        await self._teardown()
        for task in list(self._tasks):
            task.cancel()
        self._tasks.clear()

    # -- internals -------------------------------------------------------------------------------

    def _closed(self, error: BaseException) -> bool:
        """Whether ``error`` says the session is gone (the server exited or hung up)."""
        import anyio

        if isinstance(error, anyio.ClosedResourceError | anyio.BrokenResourceError | EOFError):
            return True
        text = str(error).lower()
        return "connection closed" in text or ("closed" in text and self._owner_done())

    def _owner_done(self) -> bool:
        return self._owner is None or self._owner.done()

    async def _session(self) -> Client:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (e.g. a second asyncio.run): start afresh
            self._loop, self._lock, self._client, self._owner = loop, asyncio.Lock(), None, None
        assert self._lock is not None
        async with self._lock:
            if self._client is not None and not self._owner_done():
                return self._client
            if self.state == "stopped":
                raise self._stopped()
            if self.state == "failed":
                raise ToolError(
                    f"MCP server {self.name!r} failed ({self.error}) and is left out until the "
                    "oracle restarts"
                )
            await self._backoff()
            return await self._launch()

    async def _backoff(self) -> None:
        if not self._failures:
            return
        delay = min(self.definition.backoff * 2 ** (self._failures - 1), MAX_BACKOFF)
        wait = self._failed_at + delay - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)

    async def _launch(self) -> Client:
        """Start the owner task and wait until its session is ready (or failed).

        Only this start's own owner is touched afterwards: :meth:`close` may have stopped
        it (and moved on) while it started.
        """
        await self._teardown()  # a session that ended by itself leaves its owner to reap
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        stop = self._stop = asyncio.Event()
        self._ready = ready
        self.state = "starting"
        restart = self.starts > 0
        owner = asyncio.create_task(self._own(ready, stop), name=f"mcp-{self.name}")
        self._owner = owner
        try:
            async with asyncio.timeout(self.definition.start_timeout):
                client = await asyncio.shield(ready)
        except asyncio.CancelledError:
            # The call was abandoned, or the loop is closing: so is this start. The owner
            # stays recorded, so the next start or close() waits for its server to stop.
            owner.cancel()
            if self._owner is owner and self.state == "starting":
                self.state = "idle"
            raise
        except Exception as error:
            if self._owner is not owner:
                raise self._stopped() from None
            if isinstance(error, TimeoutError):
                reason = start_timed_out(self.definition).removeprefix("it ")
            else:
                reason = f"could not start: {describe(error)}"
            await self._teardown()
            self._fail(reason)
            raise ToolError(f"MCP server {self.name!r} {reason}") from None
        if self._owner is not owner:  # stopped once ready: its session is closing
            raise self._stopped()
        self.starts += 1
        self.restarts += 1 if restart else 0
        self.state = "running"
        self.error = None
        self._client = client
        log.info("MCP server %s started", self.name)
        return client

    def _stopped(self) -> ToolError:
        return ToolError(f"MCP server {self.name!r} was stopped with the oracle")

    async def _own(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """The task that enters and leaves the SDK client (its cancel scopes need one task)."""
        client: Client | None = None

        def ended() -> None:
            # The transport ended under a session in use: the server exited or hung up.
            if stop.is_set() or client is None or self._client is not client:
                return  # stopping, or still starting (the start itself fails)
            self._client = None  # no call may take it now
            when = "during a call" if self._calling else "while idle"
            self._fail(f"it exited {when}")
            log.warning("MCP server %s exited %s; the next call restarts it", self.name, when)
            stop.set()  # leave the session: that stops what is left of the process

        try:
            async with new_client(self.definition, self._on_message, ended) as client:
                listing = await list_tools(client, self.definition)
                if not ready.done():
                    ready.set_result(client)
                await self._take(listing)
                await stop.wait()
        except BaseException as error:  # the owner must never leak an error into the loop
            if not ready.done():
                ready.set_exception(
                    error if isinstance(error, Exception) else RuntimeError(repr(error))
                )
                # A start still waiting gets it all the same; one that was abandoned (its
                # call cancelled, the loop closing) must not be reported as never retrieved.
                ready.exception()
            elif not stop.is_set():
                log.warning("MCP server %s stopped: %s", self.name, error)
            if isinstance(error, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise
        finally:
            if client is not None and self._client is client:
                self._client = None

    async def _teardown(self) -> None:
        """End the current session and wait (bounded) until its owner has left it."""
        owner, stop, ready = self._owner, self._stop, self._ready
        self._client, self._owner = None, None
        if stop is not None:
            stop.set()
        if owner is None or owner.done():
            return
        if ready is not None and not ready.done():
            owner.cancel()  # still starting: nothing to finish, its process just stops
        # wait(), not await: the owner's own cancellation must not read as this task's.
        done, _ = await asyncio.wait([owner], timeout=5)
        if not done:
            owner.cancel()
            await asyncio.wait([owner], timeout=5)

    def _fail(self, reason: str) -> None:
        self._failures += 1
        self._failed_at = time.monotonic()
        self.error = reason
        if self._failures > self.definition.max_restarts:
            self.state = "failed"
            log.error("MCP server %s failed: %s", self.name, reason)
        else:
            self.state = "crashed"

    async def _crashed(self, reason: str) -> None:
        await self._teardown()
        self._fail(reason)
        log.warning("MCP server %s %s", self.name, reason)

    async def _on_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method != "notifications/tools/list_changed":
            return  # sampling, elicitation, resources...: not supported (docs/mcp.md)
        # One listing at a time, and one more after it however many notifications came:
        # a server that floods list_changed costs two listings, not one per notification.
        self._dirty = True
        if self._relisting is None or self._relisting.done():
            task = asyncio.create_task(self._relist_while_dirty(), name=f"mcp-{self.name}-relist")
            self._relisting = task
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _relist_while_dirty(self) -> None:
        while self._dirty:
            self._dirty = False
            await self._relist()

    async def _relist(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            async with asyncio.timeout(self.definition.start_timeout):
                listing = await list_tools(client, self.definition)
        except Exception as error:
            log.warning("MCP server %s: listing its tools again failed: %s", self.name, error)
            return
        await self._take(listing)

    async def _take(self, listing: Listing) -> None:
        """Adopt a listing the running server gave; tell the listener when it changed."""
        changed = (
            listing.raw != self.listing.raw or listing.instructions != self.listing.instructions
        )
        self.listing = listing
        if not changed:
            return
        if self.on_listing is not None:
            try:
                await self.on_listing(listing)
            except Exception:
                log.exception("MCP server %s: taking its new tool listing failed", self.name)
        self.generation += 1
        event, self._next = self._next, None
        if event is not None:
            event.set()
