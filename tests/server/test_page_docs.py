"""The API docs pages in headless Chromium with every request off the machine refused: both
viewers still draw the whole API (before, /docs was blank offline: Swagger UI came from a CDN).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from browser import BROWSER_TEST, chromium_page, serve_in_thread
from support import CodePlugin

from oracle_core.server import create_app

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pytestmark = BROWSER_TEST


@pytest.fixture
def server_url(make_oracle) -> Iterator[str]:
    yield from serve_in_thread(create_app(make_oracle(CodePlugin("weather"))))


@pytest.fixture
def offline() -> Iterator[tuple[Any, list[str]]]:
    """A page that may reach 127.0.0.1 only; the list fills with every other URL it tried."""
    elsewhere: list[str] = []

    def only_loopback(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).hostname == "127.0.0.1" or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            elsewhere.append(url)
            route.abort()

    for page in chromium_page(viewport={"width": 1200, "height": 900}):
        page.route("**/*", only_loopback)
        yield page, elsewhere


def test_swagger_ui_draws_every_operation_offline(
    server_url: str, offline: tuple[Any, list[str]]
) -> None:
    page, elsewhere = offline

    page.goto(f"{server_url}/docs")

    playwright_api.expect(page.locator(".swagger-ui .info .title")).to_contain_text("oracle")
    operations = page.locator(".opblock-summary-path")
    playwright_api.expect(operations.first).to_be_visible()
    paths = set(operations.all_inner_texts())
    assert {"/health", "/threads/{thread_id}/runs", "/v1/chat/completions"} <= {
        p.replace("\u200b", "") for p in paths
    }
    assert elsewhere == []


def test_redoc_draws_the_reference_offline(server_url: str, offline: tuple[Any, list[str]]) -> None:
    page, elsewhere = offline

    page.goto(f"{server_url}/redoc")

    playwright_api.expect(page.locator("h1").first).to_contain_text("oracle")
    playwright_api.expect(page.get_by_text("/v1/chat/completions").first).to_be_attached()
    assert elsewhere == []
