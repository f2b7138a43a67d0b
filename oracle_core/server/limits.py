"""Request limits: body size and read time, message length, thread ids, and the ASGI guard
for bodies."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oracle_core.values import ids as thread_ids

THREAD_ID = thread_ids.THREAD_ID
"""Thread ids the server accepts: the one rule of :mod:`oracle_core.values.ids`, which the
CLI applies too."""


@dataclass(frozen=True)
class Limits:
    """What one request may carry.

    Attributes:
        max_body_bytes: the largest request body, in bytes (413 beyond it).
        max_message_chars: the longest user message, in characters (422 beyond it).
        max_history_messages: the most earlier messages a stateless OpenAI-compatible
            request may carry (422 beyond it); each is held to ``max_message_chars`` too.
        sse_ping_seconds: seconds of silence after which a stream sends a ``: ping`` comment,
            so proxies do not close a connection while a slow tool runs.
        body_timeout_seconds: seconds the whole body may take to arrive, counted from the
            end of the headers (408 beyond it), so a client that sends a body slowly cannot
            hold a connection and its buffer for ever.
    """

    max_body_bytes: int = 1_048_576
    max_message_chars: int = 32_000
    max_history_messages: int = 200
    sse_ping_seconds: float = 15.0
    body_timeout_seconds: float = 30.0

    def __post_init__(self) -> None:
        values = (
            self.max_body_bytes,
            self.max_message_chars,
            self.max_history_messages,
            self.sse_ping_seconds,
            self.body_timeout_seconds,
        )
        if any(value <= 0 for value in values):
            raise ValueError(f"limits must be positive, got {self}")


def _error_body(type: str, message: str) -> bytes:
    return json.dumps({"error": {"type": type, "message": message}}).encode()


class BodyLimitMiddleware:
    """Guards request bodies before any route reads them: their size and their read time.

    A declared ``Content-Length`` over ``max_bytes`` is refused (413) up front. Any body is
    then read into memory, within ``timeout_seconds`` of the end of the headers, and replayed
    to the app, so no route ever sees a partial body: a chunked body over the limit is a
    413 as it arrives, and a body that has not arrived in time is a 408 (``body_timeout``),
    after which the connection is closed.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_seconds: float = 30.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_seconds = timeout_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await _refuse(
                send,
                413,
                "body_too_large",
                f"the request body is {declared} bytes; this server accepts at most "
                f"{self.max_bytes} bytes",
            )
            return
        if not declared and not _is_chunked(scope):
            await self.app(scope, receive, send)
            return
        body = await self._read(receive, send, declared)
        if body is not None:
            await self.app(scope, _replay([body], then=receive), send)

    async def _read(self, receive: Receive, send: Send, declared: int | None) -> Message | None:
        """The whole body as one message, or ``None`` once it has been refused."""
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.timeout_seconds):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return message  # the client left: the app sees the disconnect
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.max_bytes:
                        await _refuse(
                            send,
                            413,
                            "body_too_large",
                            "the request body is larger than this server accepts: at most "
                            f"{self.max_bytes} bytes",
                        )
                        return None
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            expected = f" of {declared}" if declared else ""
            await _refuse(
                send,
                408,
                "body_timeout",
                f"the request body did not arrive within {self.timeout_seconds:g} seconds "
                f"({size}{expected} bytes came); send it at once, or raise --body-timeout "
                "(ORACLE_BODY_TIMEOUT) on the server",
            )
            return None
        return {"type": "http.request", "body": b"".join(chunks), "more_body": False}


async def _refuse(send: Send, status: int, type: str, message: str) -> None:
    """Answer in the error shape and close the connection: the rest of the body is unread."""
    data = _error_body(type, message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _is_chunked(scope: Scope) -> bool:
    return any(
        name == b"transfer-encoding" and b"chunked" in value.lower()
        for name, value in scope.get("headers", [])
    )


def _replay(messages: list[Message], then: Receive | None = None) -> Receive:
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        if then is not None:
            return await then()
        return {"type": "http.disconnect"}

    return receive
