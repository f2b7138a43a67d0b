"""The chat page behind a reverse proxy that serves the oracle under ``/oracle/`` and strips
it (``oracle serve --root-path /oracle``), in headless Chromium: every link and API call of
the page goes through the proxy's path, and the sidebar names threads by their titles."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from browser import BROWSER_TEST, chromium_page, serve_in_thread
from proxy import StrippingProxy
from support import CodePlugin, serve_app

from oracle_core.server import create_app
from oracle_core.server.serving import Proxy
from oracle_core.testing.openai_server import FakeOpenAI, Reply

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pytestmark = BROWSER_TEST


@pytest.fixture
def page_url(make_oracle, fake_openai: FakeOpenAI) -> Iterator[str]:
    """The page's address through the proxy: ``http://127.0.0.1:PORT/oracle/``."""
    import litellm  # noqa: F401  (its first import takes seconds: not inside an expectation)

    app = create_app(make_oracle(CodePlugin("weather")))
    with serve_app(app, proxy=Proxy(root_path="/oracle")) as backend:
        for url in serve_in_thread(StrippingProxy(backend, "/oracle", client="203.0.113.7")):
            yield f"{url}/oracle/"


@pytest.fixture
def page() -> Iterator[Any]:
    yield from chromium_page(viewport={"width": 1200, "height": 800})


def test_the_page_works_under_the_proxys_path_and_lists_threads_by_title(
    page_url: str, page: Any, fake_openai: FakeOpenAI
) -> None:
    expect = playwright_api.expect
    asked: list[str] = []
    page.on("request", lambda request: asked.append(urlsplit(request.url).path))
    failed: list[str] = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    fake_openai.script(Reply.text("Sunny, 24 °C."))

    page.goto(page_url)
    page.fill("#message", "What is the weather in Porto tomorrow?")
    page.click("#send")

    expect(page.locator(".msg.assistant")).to_have_text("Sunny, 24 °C.")
    thread = page.evaluate("decodeURIComponent(location.hash.split('=')[1])")
    entry = page.locator(f'#threads li[data-thread="{thread}"] button')
    expect(entry).to_have_text("What is the weather in Porto tomorrow?")
    expect(entry).to_have_attribute("title", thread)  # the id, as the tooltip

    page.click("#new-thread")
    untitled = page.locator("#threads button.untitled")
    expect(untitled).to_have_count(1)  # a thread with no message yet shows its id
    expect(untitled).to_have_text(untitled.get_attribute("title") or "?")

    assert asked and all(p.startswith("/oracle/") for p in asked if p != "/favicon.ico"), asked
    assert {"/oracle/static/app.js", "/oracle/static/app.css", "/oracle/plugins"} <= set(asked)
    assert failed == []
    assert page.evaluate("window.__csp") == []
