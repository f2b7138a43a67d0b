"""Security headers on every response, and the chat page's strict Content-Security-Policy."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from oracle_core import Route
from oracle_core.server import Limits
from oracle_core.server.page import STATIC
from oracle_core.server.security import PAGE_CSP
from oracle_core.testing.openai_server import FakeOpenAI, Reply

AUTH = {"Authorization": "Bearer s3cret"}
JSON = {**AUTH, "Content-Type": "application/json"}

# (what, method, path, request options, status)
REQUESTS: list[tuple[str, str, str, dict[str, Any], int]] = [
    ("health", "GET", "/health", {}, 200),
    ("chat page", "GET", "/", {}, 200),
    ("page script", "GET", "/static/app.js", {}, 200),
    ("page style", "GET", "/static/app.css", {}, 200),
    ("missing static file", "GET", "/static/nope.js", {}, 404),
    ("API docs", "GET", "/docs", {}, 200),
    ("API reference", "GET", "/redoc", {}, 200),
    ("API docs script", "GET", "/static/docs/swagger-ui-bundle.js", {}, 200),
    ("OpenAPI", "GET", "/openapi.json", {}, 200),
    ("threads", "GET", "/threads", {"headers": AUTH}, 200),
    ("no token", "GET", "/threads", {}, 401),
    ("wrong token", "GET", "/plugins", {"headers": {"Authorization": "Bearer x"}}, 401),
    ("unknown path", "GET", "/nope", {"headers": AUTH}, 404),
    ("wrong method", "DELETE", "/health", {}, 405),
    ("unknown thread", "GET", "/threads/none", {"headers": AUTH}, 404),
    ("bad thread id", "GET", "/threads/-x", {"headers": AUTH}, 422),
    ("not JSON", "POST", "/threads/t/runs", {"headers": JSON, "content": b"{nope"}, 400),
    ("too large", "POST", "/threads/t/runs", {"headers": AUTH, "content": b"x" * 5000}, 413),
    ("refused host", "GET", "/health", {"headers": {"Host": "attacker.example"}}, 421),
    ("plugin route", "GET", "/plugins/kiosk/status", {"headers": AUTH}, 200),
    ("public plugin route", "GET", "/plugins/kiosk/hello", {}, 200),
    ("broken plugin route", "GET", "/plugins/kiosk/broken", {"headers": AUTH}, 500),
    ("JSON run", "POST", "/threads/t/runs", {"headers": AUTH, "json": {"message": "hi"}}, 200),
    (
        "SSE run",
        "POST",
        "/threads/s/runs",
        {"headers": AUTH, "json": {"message": "hi", "stream": True}},
        200,
    ),
    (
        "OpenAI",
        "POST",
        "/v1/chat/completions",
        {"headers": AUTH, "json": {"model": "o", "messages": [{"role": "user", "content": "x"}]}},
        200,
    ),
]


def assert_security_headers(response: httpx.Response) -> None:
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


@pytest.mark.parametrize(
    ("method", "path", "options", "status"),
    [r[1:] for r in REQUESTS],
    ids=[r[0] for r in REQUESTS],
)
async def test_every_response_carries_the_security_headers(
    serve, kiosk, fake_openai: FakeOpenAI, method: str, path: str, options: Any, status: int
) -> None:
    fake_openai.respond_with(lambda request: Reply.text("Hello."))
    served = await serve(
        kiosk, tokens=("s3cret",), limits=Limits(max_body_bytes=4096), allowed_hosts="127.0.0.1"
    )

    response = await served.client.request(method, path, **options)

    assert response.status_code == status
    assert_security_headers(response)


async def test_an_internal_error_outside_every_route_handler_carries_them_too(
    serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = await serve()

    async def broken() -> list[str]:
        raise RuntimeError("the store is gone")

    monkeypatch.setattr(served.oracle.checkpointer, "threads", broken)
    transport = httpx.ASGITransport(app=served.app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.get("/threads")

    assert response.status_code == 500
    assert response.json()["error"]["type"] == "server_error"
    assert_security_headers(response)


async def test_a_plugin_route_that_sets_a_header_itself_keeps_its_own(serve, routes_plugin) -> None:
    async def framed(request: Request) -> PlainTextResponse:
        return PlainTextResponse("framed", headers={"X-Frame-Options": "SAMEORIGIN"})

    served = await serve(routes_plugin(routes=[Route("/framed", framed, public=True)]))

    response = await served.client.get("/plugins/kiosk/framed")

    assert response.headers["x-frame-options"] == "SAMEORIGIN"
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_the_chat_page_has_a_strict_policy(serve) -> None:
    served = await serve()

    policy = (await served.client.get("/")).headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))

    assert policy == PAGE_CSP
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'" and directives["base-uri"] == "'none'"
    assert "unsafe" not in policy and "*" not in policy


class _Page(HTMLParser):
    """Collects what in the page the policy would block."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name, _ in attrs:
            if name == "style" or name.startswith("on"):
                self.problems.append(f"<{tag} {name}=...>")
        if tag == "style":
            self.problems.append("<style>")
        if tag == "script" and not (values.get("src") or "").startswith("/static/"):
            self.problems.append(f"<script src={values.get('src')!r}>")
        href = values.get("href") or ""
        if tag == "link" and values.get("rel") == "stylesheet" and not href.startswith("/static/"):
            self.problems.append(f"<link href={href!r}>")
        self._in = tag

    def handle_data(self, data: str) -> None:
        if self._in == "script" and data.strip():
            self.problems.append("inline script")


def test_the_page_has_nothing_inline_that_its_policy_would_block() -> None:
    parser = _Page()
    served = (STATIC / "index.html").read_text(encoding="utf-8").replace("{{root}}", "")
    parser.feed(served)  # as served without a root path (with one, its links start with it)
    script = (STATIC / "app.js").read_text(encoding="utf-8")

    assert parser.problems == []
    # what script-src 'self' / style-src 'self' would refuse at run time
    assert not re.search(r"\beval\(|new Function\(|innerHTML|setAttribute\(\s*['\"]style", script)
