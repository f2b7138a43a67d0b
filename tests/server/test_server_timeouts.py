"""Slow clients (slowloris): headers and bodies that do not arrive in time are cut off.

Each test talks raw HTTP to ``oracle serve``'s uvicorn server on 127.0.0.1, with timeouts of
half a second, and waits for the server's answer with a deadline, never a fixed sleep.
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import time
from collections.abc import Iterator

import pytest

from oracle_core.server import Limits, create_app
from oracle_core.server.serving import MAX_HEADER_BYTES, ServerTimeouts

TIMEOUT = 0.5
DEADLINE = 15.0  # far beyond TIMEOUT: a server that never cuts the client off fails here
TICK = 0.05
HEAD = b"POST /threads/t/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


@pytest.fixture
def address(make_oracle, live) -> tuple[str, int]:
    app = create_app(make_oracle(), limits=Limits(body_timeout_seconds=TIMEOUT))
    return live(app, ServerTimeouts(header_seconds=TIMEOUT))


def talk(address: tuple[str, int], first: bytes, then: Iterator[bytes] | None = None) -> bytes:
    """Send ``first``, then one piece of ``then`` per tick while the server is silent.

    Returns everything the server sent once it has closed the connection; fails if it is
    still open at the deadline.
    """
    deadline = time.monotonic() + DEADLINE
    received = b""
    with socket.create_connection(address, timeout=DEADLINE) as sock:
        sock.sendall(first)
        while time.monotonic() < deadline:
            readable, _, _ = select.select([sock], [], [], TICK)
            if readable:
                try:
                    chunk = sock.recv(65536)
                except ConnectionResetError:
                    return received
                if not chunk:
                    return received
                received += chunk
                continue
            piece = next(then, None) if then is not None else None
            if piece is not None:
                try:
                    sock.sendall(piece)
                except (BrokenPipeError, ConnectionResetError):
                    continue  # closed on us: read what it said
    pytest.fail(f"the server still held the connection after {DEADLINE} s: {received!r}")


def status_and_error(reply: bytes) -> tuple[int, dict[str, str]]:
    head, _, body = reply.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body)["error"] if body.startswith(b"{") else {}


def forever(piece: bytes) -> Iterator[bytes]:
    return itertools.repeat(piece)


SLOW_HEADERS = {
    "a partial request line": (b"GET /hea", iter(())),
    "a request line only": (b"GET /health HTTP/1.1\r\n", iter(())),
    "headers without their end": (b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", iter(())),
    "headers dripped a byte a tick": (b"GET /health HTTP/1.1\r\nX-Pad: ", forever(b"a")),
    "headers dripped a header a tick": (b"GET /health HTTP/1.1\r\n", forever(b"X-A: b\r\n")),
    "a second request, partial, on a kept-alive connection": (
        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /health HTTP/1.1\r\nHo",
        iter(()),
    ),
}


@pytest.mark.parametrize(("first", "then"), SLOW_HEADERS.values(), ids=SLOW_HEADERS.keys())
def test_headers_that_do_not_arrive_in_time_get_408_and_the_connection_is_closed(
    address: tuple[str, int], first: bytes, then: Iterator[bytes]
) -> None:
    reply = talk(address, first, then)

    last = reply[reply.rindex(b"HTTP/1.1 ") :]
    status, error = status_and_error(last)
    assert status == 408 and error["type"] == "header_timeout"
    assert "ORACLE_HEADER_TIMEOUT" in error["message"]


def test_a_connection_that_sends_nothing_is_closed(address: tuple[str, int]) -> None:
    assert talk(address, b"") == b""


SLOW_BODIES = {
    "a declared body that stops": (HEAD + b"Content-Length: 100\r\n\r\n{", iter(())),
    "a declared body dripped a byte a tick": (HEAD + b"Content-Length: 100000\r\n\r\n", forever(b" ")),
    "a chunked body that stops": (HEAD + b"Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n", iter(())),
    "a chunked body dripped a chunk a tick": (
        HEAD + b"Transfer-Encoding: chunked\r\n\r\n",
        forever(b"1\r\n \r\n"),
    ),
}  # fmt: skip


@pytest.mark.parametrize(("first", "then"), SLOW_BODIES.values(), ids=SLOW_BODIES.keys())
def test_a_body_that_does_not_arrive_in_time_gets_408_and_the_connection_is_closed(
    address: tuple[str, int], first: bytes, then: Iterator[bytes]
) -> None:
    status, error = status_and_error(talk(address, first, then))

    assert status == 408 and error["type"] == "body_timeout"
    assert "ORACLE_BODY_TIMEOUT" in error["message"]


@pytest.mark.parametrize(
    "request_bytes",
    [
        HEAD + b"Content-Length: 2\r\nConnection: close\r\n\r\n{}",
        HEAD + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\n{\r\n1\r\n}\r\n0\r\n\r\n",
        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    ],
    ids=["declared body", "chunked body", "no body"],
)  # fmt: skip
def test_a_request_sent_at_once_is_answered(address: tuple[str, int], request_bytes: bytes) -> None:
    reply = talk(address, request_bytes)

    status = int(reply.split(b" ", 2)[1])
    assert status in (200, 422)  # 422: the body {} was read and found to lack a message


def test_headers_that_grow_past_the_size_limit_are_refused(address: tuple[str, int]) -> None:
    start = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "

    reply = talk(address, start, forever(b"a" * (MAX_HEADER_BYTES // 4)))

    assert reply.startswith(b"HTTP/1.1 400 ")
