"""The chat page in headless Chromium (Debian's ``chromium``, driven by Playwright)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser import ARGS, BROWSER_TEST, CHROMIUM, RECORD_CSP, serve_in_thread
from support import CodePlugin

from oracle_core.server import create_app
from oracle_core.testing.openai_server import FakeOpenAI, Reply

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pytestmark = BROWSER_TEST


@pytest.fixture
def page_url(make_oracle, fake_openai: FakeOpenAI) -> Iterator[str]:
    # litellm's first import takes seconds on a busy machine: pay it before the page's
    # expectations (5 s each) start counting, not inside the first run.
    import litellm  # noqa: F401

    oracle = make_oracle(CodePlugin("weather"), CodePlugin("notes", visibility="always"))
    yield from serve_in_thread(create_app(oracle, tokens=("s3cret",)))


@pytest.fixture
def page() -> Iterator[Any]:
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page()
            # Every Content-Security-Policy violation on the page lands in window.__csp.
            page.add_init_script(RECORD_CSP)
            yield page
        finally:
            browser.close()


def test_a_message_sent_on_the_page_shows_the_answer_tool_calls_loads_and_tokens(
    page_url: str, page: Any, fake_openai: FakeOpenAI
) -> None:
    expect = playwright_api.expect
    fake_openai.script(
        Reply(tool_calls=[("load_capability", {"names": ["weather"]})], usage=(100, 5)),
        Reply(tool_calls=[("weather_tool", {"text": "Porto"})], usage=(200, 5)),
        Reply(content="Rain in Porto.", usage=(300, 12)),
    )
    page.goto(page_url)

    expect(page.locator("#token-form")).to_be_visible()  # the API said 401
    page.fill("#token", "s3cret")
    page.click("#token-form button")
    expect(page.locator("#plugins li[data-plugin=weather]")).to_contain_text("on-demand")
    page.fill("#message", "Weather in Porto?")
    page.click("#send")

    expect(page.locator(".msg.assistant")).to_have_text("Rain in Porto.")
    expect(page.locator(".msg.user")).to_have_text("Weather in Porto?")
    call = page.locator(".tool-call[data-tool=weather_tool]")
    expect(call.locator("summary .call")).to_have_text('weather_tool({"text": "Porto"})')
    expect(call.locator(".result")).to_have_text("weather_tool says Porto")
    expect(page.locator(".capability-load")).to_have_text("⚡ capability loaded: weather")
    expect(page.locator(".turn-usage")).to_contain_text("tokens this turn")
    expect(page.locator("#plugins li[data-plugin=weather] .tier")).to_have_text("loaded")

    page.reload()  # the thread is in the URL: the page rebuilds it from GET /threads/{id}

    expect(page.locator(".msg.assistant")).to_have_text("Rain in Porto.")
    expect(page.locator(".tool-call[data-tool=weather_tool] .result")).to_have_text(
        "weather_tool says Porto"
    )
    expect(page.locator(".capability-load")).to_have_text("⚡ capability loaded: weather")
    expect(page.locator(".turn-usage")).to_have_text(
        "used 622 tokens this turn (600 prompt + 22 completion)"
    )
    assert page.evaluate("window.__csp") == []  # the page works under its strict policy


def test_the_browser_enforces_the_pages_policy(page_url: str, page: Any) -> None:
    response = page.goto(page_url)
    ran = page.evaluate(
        """() => {
            const script = document.createElement("script");
            script.textContent = "window.__inline = true";
            document.body.append(script);
            return window.__inline === true;
        }"""
    )

    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    assert ran is False
    expect = playwright_api.expect
    expect(page.locator("#token-form")).to_be_visible()  # app.js, from /static/, did run
    assert any(v.startswith("script-src") for v in page.evaluate("window.__csp"))
