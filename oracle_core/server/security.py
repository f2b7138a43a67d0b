"""Security headers on every response, and the chat page's Content-Security-Policy."""

from __future__ import annotations

import base64
import hashlib
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

PAGE_CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",  # the page's empty data: favicon
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
"""The chat page's policy: its own script, style and API only; no inline code, no framing.

The page keeps it: its script and style are files under ``/static/``, and it writes what the
server sends with ``textContent``, never as HTML, except answers' Markdown, which the server
renders and sanitizes itself (:mod:`oracle_core.server.markdown`).
"""

_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def docs_csp(html: str) -> str:
    """The policy of an API docs page (``/docs``, ``/redoc``) whose HTML is ``html``.

    Its viewer's files are the server's own, and so is everything they may load: the
    OpenAPI document, their styles and icons, ReDoc's search worker (a ``blob:``). The
    page's inline scripts (Swagger UI's start) are allowed by their hashes, its styles
    inline (both viewers set them). Nothing from another site loads, not even ReDoc's
    built-in logo on redoc.ly, and nothing is evaluated from text.
    """
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(m.encode()).digest()).decode()}'"
        for m in _INLINE_SCRIPT.findall(html)
    )
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self' {hashes}".rstrip(),
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "worker-src blob:",
            "form-action 'self'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
        ]
    )


SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    # Only framing is ruled out here; the pages set their own (PAGE_CSP, docs_csp).
    (b"content-security-policy", b"frame-ancestors 'none'"),
)
"""Headers every response carries unless its route set the header itself."""


class SecurityHeadersMiddleware:
    """Adds :data:`SECURITY_HEADERS` to every HTTP response that does not set them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(n, v) for n, v in SECURITY_HEADERS if n not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
