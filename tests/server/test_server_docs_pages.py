"""The API docs pages, ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), come from the package's
own files: nothing on them points at another site, and they follow the root path."""

from __future__ import annotations

import re

import httpx
import pytest
from support import CodePlugin

from oracle_core.server import create_app

URL_ATTRIBUTES = re.compile(
    r"""(?:src|href)=["']([^"']+)["']|url: ?["']([^"']+)["']|spec-url=["']([^"']+)["']"""
)
"""Where a docs page names a URL it loads: script and style sources, icons, the spec."""


def loaded_urls(html: str) -> list[str]:
    return [next(g for g in match.groups() if g) for match in URL_ATTRIBUTES.finditer(html)]


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_a_docs_page_loads_only_files_the_server_serves(serve, page: str) -> None:
    served = await serve(CodePlugin("weather"))

    response = await served.client.get(page)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "http://" not in response.text and "https://" not in response.text
    urls = loaded_urls(response.text)
    assert "/openapi.json" in urls
    assets = [u for u in urls if u.startswith("/static/docs/")]
    assert len(assets) >= 2  # the viewer's script, and its icon (Swagger UI: its style too)
    for url in assets:
        asset = await served.client.get(url)
        assert asset.status_code == 200, url
        assert len(asset.content) > 500, url


async def test_the_docs_pages_are_not_in_the_openapi_document(serve) -> None:
    served = await serve(CodePlugin("weather"))

    paths = (await served.client.get("/openapi.json")).json()["paths"]

    assert not [p for p in paths if p.startswith(("/docs", "/redoc", "/static"))]


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_behind_a_proxy_path_every_url_of_a_docs_page_starts_with_it(
    make_oracle, page: str
) -> None:
    app = create_app(make_oracle(CodePlugin("weather")))
    transport = httpx.ASGITransport(app=app, root_path="/oracle")
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.get(page)

    urls = loaded_urls(response.text)
    assert urls and all(u.startswith("/oracle/") for u in urls), urls
    assert "/oracle/openapi.json" in urls


async def test_the_docs_are_served_without_the_chat_page_too(make_oracle) -> None:
    app = create_app(make_oracle(CodePlugin("weather")), chat_page=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        script = await client.get("/static/docs/swagger-ui-bundle.js")
        page = await client.get("/")

    assert script.status_code == 200 and page.status_code == 404
