"""Fixtures for the server tests: an app served in process, and plugins with routes."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from oracle_core import Oracle, PluginManifest, Route, hookimpl
from oracle_core.server import Limits, create_app
from oracle_core.server.serving import ServerTimeouts, make_server


@dataclass
class Served:
    """An app serving an oracle, with a client talking to it in process."""

    app: Any
    oracle: Oracle
    client: httpx.AsyncClient


class Serve(Protocol):
    async def __call__(
        self,
        *plugins: object,
        tokens: tuple[str, ...] = (),
        limits: Limits | None = None,
        allowed_hosts: str | None = None,
        **options: Any,
    ) -> Served: ...


@pytest.fixture
async def serve(make_oracle: Callable[..., Oracle]) -> AsyncIterator[Serve]:
    """Start ``create_app`` (lifespan included) over an oracle made from ``plugins``."""
    async with AsyncExitStack() as stack:

        async def start(
            *plugins: object,
            tokens: tuple[str, ...] = (),
            limits: Limits | None = None,
            allowed_hosts: str | None = None,
            **options: Any,
        ) -> Served:
            oracle = make_oracle(*plugins, **options)
            app = create_app(oracle, tokens=tokens, limits=limits, allowed_hosts=allowed_hosts)
            await stack.enter_async_context(app.router.lifespan_context(app))
            transport = httpx.ASGITransport(app=app)
            client = httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")
            await stack.enter_async_context(client)
            return Served(app, oracle, client)

        yield start


@dataclass
class RoutesPlugin:
    """A plugin with HTTP routes and lifecycle hooks that records what happened."""

    name: str = "kiosk"
    routes: list[Route] = field(default_factory=list)
    events: list[str] = field(default_factory=list)

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name=self.name, summary=f"The {self.name} plugin.", when_to_use=["tests"]
        )

    @hookimpl
    def oracle_routes(self) -> list[Route]:
        return list(self.routes)

    @hookimpl
    async def oracle_startup(self) -> None:
        self.events.append("startup")

    @hookimpl
    def oracle_shutdown(self) -> None:
        self.events.append("shutdown")


async def _status(request: Request) -> dict[str, Any]:
    oracle = request.app.state.oracle
    return {"plugin": "kiosk", "plugins": list(oracle.registry.plugins)}


async def _echo(request: Request) -> PlainTextResponse:
    return PlainTextResponse(f"echo {request.path_params['word']}")


async def _hello(request: Request) -> dict[str, str]:
    return {"hello": "world"}


async def _broken(request: Request) -> None:
    raise RuntimeError("the kiosk is on fire")


@pytest.fixture
def kiosk() -> RoutesPlugin:
    """A plugin with a protected JSON route, a path-parameter route, a public one and a broken one."""
    return RoutesPlugin(
        routes=[
            Route("/status", _status),
            Route("/echo/{word}", _echo, methods=("GET", "POST")),
            Route("/hello", _hello, public=True),
            Route("/broken", _broken),
        ]
    )


def sse_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Parse an SSE body into ``(event type, data)`` pairs, skipping comments."""
    events = []
    for block in text.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        kind = next(line[7:] for line in lines if line.startswith("event: "))
        data = next(line[6:] for line in lines if line.startswith("data: "))
        events.append((kind, json.loads(data)))
    return events


@pytest.fixture
def parse_sse() -> Callable[[str], list[tuple[str, dict[str, Any]]]]:
    """:func:`sse_events`, as a fixture (test modules cannot import a conftest)."""
    return sse_events


@pytest.fixture
def routes_plugin() -> type[RoutesPlugin]:
    """The :class:`RoutesPlugin` class, to build plugins with other routes."""
    return RoutesPlugin


class Live(Protocol):
    def __call__(self, app: Any, timeouts: ServerTimeouts | None = None) -> tuple[str, int]: ...


@pytest.fixture
def live() -> Iterator[Live]:
    """Serve an app with ``oracle serve``'s uvicorn server, in a thread on 127.0.0.1.

    Returns the bound ``(host, port)`` once the server takes connections; every server
    started is stopped (as on SIGTERM) at the end of the test.
    """
    running: list[tuple[Any, threading.Thread]] = []

    def start(app: Any, timeouts: ServerTimeouts | None = None) -> tuple[str, int]:
        serving = threading.Event()
        server = make_server(app, timeouts, log_level="warning", on_serving=serving.set)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((server, thread))
        assert serving.wait(30), "uvicorn did not start"
        host, port = sock.getsockname()[:2]
        return host, port

    yield start
    for server, thread in running:
        server.should_exit = True
        thread.join(60)
