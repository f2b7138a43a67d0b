"""A request id on every request: taken from ``X-Request-ID`` when sent, made otherwise.

:class:`RequestIdMiddleware` sets :data:`~oracle_core.telemetry.log_context.REQUEST_ID`
while the request is handled, so every line logged for it (the access line included), and
every line of a run it starts, names it; the response carries it back in ``X-Request-ID``.
A proxy's or client's id is kept when it is a plain token (:data:`REQUEST_ID_PATTERN`); any
other value (spaces, quotes, control characters, more than 128 characters) could forge or
break a log line, so the server makes its own id instead.
"""

from __future__ import annotations

import re
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oracle_core.telemetry.log_context import REQUEST_ID

HEADER = b"x-request-id"
"""The header a request id is read from and answered in."""

REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}")
"""What an incoming request id must be, whole, to be kept: 1 to 128 letters, digits and
``. _ : @ / + = -``, starting with a letter or digit (UUIDs, ULIDs, base64, ``trace:span``)."""


def request_id(sent: bytes | None) -> str:
    """The id of a request whose ``X-Request-ID`` header was ``sent`` (``None``: absent):
    that id when it fits :data:`REQUEST_ID_PATTERN`, else a new one (32 hex digits)."""
    if sent is not None:
        text = sent.decode("latin-1")
        if REQUEST_ID_PATTERN.fullmatch(text):
            return text
    return uuid.uuid4().hex


class RequestIdMiddleware:
    """ASGI middleware naming each HTTP request (see the module's docs).

    Args:
        app: the application to wrap.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = next((v for n, v in scope.get("headers") or () if n == HEADER), None)
        rid = request_id(sent)
        header = (HEADER, rid.encode("ascii"))

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(n, v) for n, v in message.get("headers", []) if n.lower() != HEADER]
                message = {**message, "headers": [*headers, header]}
            await send(message)

        token = REQUEST_ID.set(rid)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            REQUEST_ID.reset(token)
