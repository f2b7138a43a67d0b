"""Request limits: body size, message length, thread ids, and the ASGI guard for bodies."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

THREAD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$")
"""Thread ids the server accepts: 1 to 128 of letters, digits and ``._:@-``, not leading
with punctuation (so an id is always safe in a URL path segment and a log line)."""


@dataclass(frozen=True)
class Limits:
    """What one request may carry.

    Attributes:
        max_body_bytes: the largest request body, in bytes (413 beyond it).
        max_message_chars: the longest user message, in characters (422 beyond it).
        sse_ping_seconds: seconds of silence after which a stream sends a ``: ping`` comment,
            so proxies do not close a connection while a slow tool runs.
    """

    max_body_bytes: int = 1_048_576
    max_message_chars: int = 32_000
    sse_ping_seconds: float = 15.0

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1 or self.max_message_chars < 1 or self.sse_ping_seconds <= 0:
            raise ValueError(f"limits must be positive, got {self}")


def _too_large_message(size: int | None, limit: int) -> bytes:
    got = f"is {size} bytes" if size is not None else "is larger than that"
    body = {
        "error": {
            "type": "body_too_large",
            "message": f"the request body {got}; this server accepts at most {limit} bytes",
        }
    }
    return json.dumps(body).encode()


class BodyLimitMiddleware:
    """Answers 413 to any request whose body exceeds ``max_bytes``, before a route reads it.

    A declared ``Content-Length`` is checked up front; a chunked body (no length) is read
    into memory up to the limit and replayed to the app, so no route ever sees a partial body.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None:
            if declared > self.max_bytes:
                await self._refuse(send, declared)
                return
            await self.app(scope, receive, send)
            return
        if not _is_chunked(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send, None)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body: Message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([body], then=receive), send)

    async def _refuse(self, send: Send, size: int | None) -> None:
        data = _too_large_message(size, self.max_bytes)
        await send(
            {
                "type": "http.response.start",
                "status": 413,
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
