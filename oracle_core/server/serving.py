"""Running the app under uvicorn, as ``oracle serve`` does: timeouts, a graceful stop, logs
and the place behind a reverse proxy.

What a slow or idle client can hold, and for how long:

- the request line and headers must arrive within ``header_seconds`` of the connection
  opening (or of the first byte of the next request on a kept-alive connection), and may
  not grow past :data:`MAX_HEADER_BYTES` while incomplete; uvicorn has no such timeout, so
  :class:`HeaderTimeoutProtocol` adds one to its h11 protocol;
- the body must arrive within :attr:`Limits.body_timeout_seconds` of the headers (the app's
  :class:`~oracle_core.server.limits.BodyLimitMiddleware` answers 408);
- an idle kept-alive connection is closed after :data:`KEEP_ALIVE_SECONDS`.

On SIGTERM (or Ctrl-C) :class:`OracleServer` stops taking connections, refuses new runs
(503 ``shutting_down``), gives runs in progress the grace period less a reserve, then
hands the rest over (saved as still running, their leases given back, for another process
to resume; their clients get 503 ``run_handed_over``), or cancels them with
``ORACLE_RESUME_RUNS=0`` (``run_cancelled``), so the process is gone within the grace period.

Behind a reverse proxy (:class:`Proxy`): the proxy serves the app under a path prefix it
strips (``root_path``, which the app's links, the chat page's included, start with), and the
client's address and scheme come from ``X-Forwarded-For`` and ``X-Forwarded-Proto`` when the
connection comes from an address in ``forwarded_allow_ips`` (uvicorn's proxy headers).
"""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from oracle_core.server.log_formats import LogFormat
from oracle_core.server.logging_config import server_log_config

if TYPE_CHECKING:
    from fastapi import FastAPI

    from oracle_core.server.context import ServerContext
    from oracle_core.server.runs import ThreadRuns

MAX_HEADER_BYTES = 16 * 1024
"""How large an incomplete request line plus headers may grow (h11's limit; uvicorn answers
400 beyond it)."""

KEEP_ALIVE_SECONDS = 5
"""How long an idle kept-alive connection stays open."""


@dataclass(frozen=True)
class ServerTimeouts:
    """How long the server waits on clients and on itself.

    Attributes:
        header_seconds: the request line and headers must arrive within this many seconds.
        shutdown_grace_seconds: after SIGTERM, how long requests and runs in progress get.
    """

    header_seconds: float = 10.0
    shutdown_grace_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.header_seconds <= 0 or self.shutdown_grace_seconds <= 0:
            raise ValueError(f"timeouts must be positive, got {self}")

    @property
    def run_grace_seconds(self) -> float:
        """How long runs get after SIGTERM: the grace less a second (half of a short grace)
        for their clients' 503s to go out and the store to close."""
        grace = self.shutdown_grace_seconds
        return max(grace - 1.0, grace / 2)


_ROOT_PATH = re.compile(r"(/[A-Za-z0-9._~%-]+)*")

ROOT_PATH_RULE = "a path such as /oracle: segments of letters, digits and . _ ~ % -, each after a /"
"""What :func:`check_root_path` accepts, in words (for error messages)."""


def check_root_path(root_path: str) -> str:
    """``root_path`` as the app uses it: ``""`` for none, else ``/a/b`` (a trailing ``/``
    dropped).

    Raises:
        ValueError: naming the value and :data:`ROOT_PATH_RULE`.
    """
    trimmed = root_path.rstrip("/")
    if len(trimmed) > 200 or not _ROOT_PATH.fullmatch(trimmed):
        raise ValueError(f"root path {root_path[:80]!r} is not valid: use {ROOT_PATH_RULE}")
    return trimmed


@dataclass(frozen=True)
class Proxy:
    """Where the server sits behind a reverse proxy (uvicorn's settings of the same names).

    Attributes:
        root_path: the path prefix the proxy serves the app under and strips before
            forwarding (``/oracle``); ``""``: none. Checked by :func:`check_root_path`.
        proxy_headers: trust ``X-Forwarded-For`` / ``X-Forwarded-Proto`` from
            ``forwarded_allow_ips``.
        forwarded_allow_ips: the addresses (comma-separated IPs or networks, ``*`` for any)
            whose forwarded headers are trusted; ``None``: uvicorn's default,
            ``$FORWARDED_ALLOW_IPS`` or ``127.0.0.1,::1``.
    """

    root_path: str = ""
    proxy_headers: bool = True
    forwarded_allow_ips: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "root_path", check_root_path(self.root_path))


_HEADER_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: application/json\r\n"
    b"x-content-type-options: nosniff\r\n"
    b"connection: close\r\n"
    b"content-length: %d\r\n\r\n%s"
)


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, with a deadline for each request's line and headers.

    The clock starts when the connection opens, or when the first byte of a later request
    arrives on it, and stops once the headers are complete. At the deadline a connection
    that sent part of a request gets a 408 (``header_timeout``); one that sent nothing is
    just closed.
    """

    header_seconds: float = 10.0
    """Set on the subclass :func:`protocol_class` makes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._header_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_header_clock()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            self._header_bytes += len(data)
            if self._header_deadline is None:
                self._start_header_clock()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._stop_header_clock()

    def on_response_complete(self) -> None:
        # The next request's clock starts with its first byte (uvicorn's keep-alive timeout
        # covers the wait for it); bytes of it already buffered count from now.
        super().on_response_complete()
        self._header_bytes = len(self.conn.trailing_data[0])
        if self.conn.their_state is h11.IDLE and self._header_bytes:
            self._start_header_clock()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_clock()
        super().connection_lost(exc)

    def _start_header_clock(self) -> None:
        self._stop_header_clock()
        self._header_deadline = self.loop.call_later(self.header_seconds, self._header_late)

    def _stop_header_clock(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _header_late(self) -> None:
        self._header_deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self._header_bytes:
            message = (
                f'{{"error": {{"type": "header_timeout", "message": "the request line and '
                f"headers did not arrive within {self.header_seconds:g} seconds; send them "
                f'at once, or raise --header-timeout (ORACLE_HEADER_TIMEOUT) on the server"}}}}'
            ).encode()
            self.transport.write(_HEADER_TIMEOUT % (len(message), message))
        self.transport.close()


def protocol_class(header_seconds: float) -> type[HeaderTimeoutProtocol]:
    """A :class:`HeaderTimeoutProtocol` with its deadline set to ``header_seconds``."""

    class OracleH11Protocol(HeaderTimeoutProtocol):
        pass

    OracleH11Protocol.header_seconds = header_seconds
    return OracleH11Protocol


class OracleServer(uvicorn.Server):
    """A uvicorn server that drains the app's runs on SIGTERM within the grace period.

    Args:
        config: uvicorn's config; :func:`make_server` builds one.
        runs: the app's runs (``app.state.server.runs``), drained on shutdown.
        timeouts: the grace period.
        on_serving: called once the server takes connections (``oracle serve`` prints its
            banner there).
    """

    def __init__(
        self,
        config: uvicorn.Config,
        runs: ThreadRuns,
        timeouts: ServerTimeouts,
        on_serving: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(config)
        self.runs = runs
        self.timeouts = timeouts
        self.on_serving = on_serving

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start serving, then call ``on_serving``."""
        await super().startup(sockets)
        if not self.should_exit and self.on_serving is not None:
            self.on_serving()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop taking connections and drain: runs first, then uvicorn's own requests."""
        drain = asyncio.create_task(self.runs.drain(self.timeouts.run_grace_seconds))
        try:
            await super().shutdown(sockets)
        finally:
            await drain


def make_server(
    app: FastAPI,
    timeouts: ServerTimeouts | None = None,
    *,
    log_level: str = "info",
    log_format: LogFormat = "text",
    proxy: Proxy | None = None,
    on_serving: Callable[[], None] | None = None,
) -> OracleServer:
    """A uvicorn server for ``app`` (from :func:`~oracle_core.server.create_app`).

    Run it with ``server.run(sockets=[sock])`` (blocking; handles SIGTERM and Ctrl-C) or
    ``await server.serve(sockets=[sock])``. ``log_format`` is ``text`` or ``json``
    (:mod:`oracle_core.server.log_formats`); ``proxy`` says where a reverse proxy serves it.
    """
    timeouts = timeouts or ServerTimeouts()
    proxy = proxy or Proxy()
    config = uvicorn.Config(
        app,
        http=protocol_class(timeouts.header_seconds),
        log_level=log_level,
        log_config=server_log_config(log_level, log_format),  # every log to stderr
        root_path=proxy.root_path,
        proxy_headers=proxy.proxy_headers,
        forwarded_allow_ips=proxy.forwarded_allow_ips,
        lifespan="on",
        server_header=False,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        # uvicorn cuts what is still going at the end of the grace; runs end earlier (above).
        timeout_graceful_shutdown=timeouts.shutdown_grace_seconds,  # type: ignore[arg-type]
    )
    ctx: ServerContext = app.state.server
    return OracleServer(config, ctx.runs, timeouts, on_serving)
