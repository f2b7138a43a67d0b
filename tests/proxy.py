"""A reverse proxy for tests, as nginx's ``location /oracle/ { proxy_pass http://backend/; }``
is one: it serves a backend under a path prefix that it strips, streams both ways, and adds
``X-Forwarded-For`` / ``X-Forwarded-Proto`` as a TLS-terminating proxy would."""

from __future__ import annotations

import httpx
from starlette.types import Message, Receive, Scope, Send

HOP_BY_HOP = {b"host", b"connection", b"keep-alive", b"transfer-encoding", b"content-length"}


class StrippingProxy:
    """An ASGI app forwarding ``<prefix>/...`` to ``backend`` as ``/...``; anything else is 404.

    Args:
        backend: the backend's base URL (``http://127.0.0.1:PORT``).
        prefix: the path it is served under (``/oracle``).
        client: the ``X-Forwarded-For`` it adds (the "real" client's address).
        scheme: the ``X-Forwarded-Proto`` it adds.
    """

    def __init__(self, backend: str, prefix: str, client: str, scheme: str = "https") -> None:
        self.backend, self.prefix, self.client, self.scheme = backend, prefix, client, scheme
        self.forwarded: list[str] = []  # the paths it sent on, for a test to read

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path: str = scope["path"]
        if not path.startswith(self.prefix + "/"):
            await _answer(send, 404, b"not under the proxy's prefix")
            return
        rest = path[len(self.prefix) :]
        query = scope.get("query_string", b"").decode()
        self.forwarded.append(rest)
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        headers += [
            (b"x-forwarded-for", self.client.encode()),
            (b"x-forwarded-proto", self.scheme.encode()),
        ]
        async with httpx.AsyncClient(base_url=self.backend, timeout=60) as http:
            request = http.build_request(
                scope["method"],
                rest + (f"?{query}" if query else ""),
                headers=headers,
                content=body,
            )
            response = await http.send(request, stream=True)
            try:
                kept = [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP]
                await send(
                    {"type": "http.response.start", "status": response.status_code, "headers": kept}
                )
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            finally:
                await response.aclose()


async def _answer(send: Send, status: int, text: bytes) -> None:
    start: Message = {"type": "http.response.start", "status": status, "headers": []}
    await send(start)
    await send({"type": "http.response.body", "body": text})


__all__ = ["StrippingProxy"]
