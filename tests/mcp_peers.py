"""An MCP client session against the oracle's /mcp endpoint, for the MCP server tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp import Client
from support import serve_app

from oracle_core import (
    Oracle,
)
from oracle_core.server import create_app


@contextmanager
def serve(oracle: Oracle) -> Iterator[str]:
    """``oracle serve`` of ``oracle`` on 127.0.0.1 (token ``tok``); yields the ``/mcp`` URL."""
    with serve_app(create_app(oracle, tokens="tok")) as base:
        yield f"{base}/mcp"


def connect(url: str, thread: str | None = None, **options: Any) -> tuple[Any, Client]:
    """An HTTP client with the server's token (and ``X-Oracle-Thread``), and an MCP client."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": "Bearer tok"}
    if thread is not None:
        headers["X-Oracle-Thread"] = thread
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0))
    transport = streamable_http_client(url, http_client=http)
    return http, Client(transport, mode="legacy", cache=None, **options)
