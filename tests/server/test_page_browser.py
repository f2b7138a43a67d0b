"""The chat page in headless Chromium: welcome, Markdown (sanitized), token bars, screenshots.

Screenshots go to the test's ``tmp_path``, or to ``$ORACLE_SCREENSHOTS`` when it is set
(``ORACLE_SCREENSHOTS=shots make test`` keeps them to look at).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import BROWSER_TEST, chromium_page, screenshot_folder, serve_in_thread
from payloads import PAYLOADS
from support import CodePlugin

from oracle_core.server import create_app
from oracle_core.testing.openai_server import FakeOpenAI, Reply

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pytestmark = BROWSER_TEST

# What a page must never hold after rendering untrusted text: anything that runs, loads or styles.
FORBIDDEN = (
    "#log script, #log img, #log iframe, #log svg, #log object, #log style, #log link, "
    "#log form, #log meta, #log base, #log math, #log [onerror], #log [onload], "
    "#log [ontoggle], #log .msg [style], #log .tool-call [style]"
)  # (the token bars' widths are styles the page sets itself)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    return screenshot_folder(tmp_path)


@pytest.fixture
def page_url(make_oracle, fake_openai: FakeOpenAI) -> Iterator[str]:
    import litellm  # noqa: F401  (its first import takes seconds: not inside an expectation)

    oracle = make_oracle(
        CodePlugin("weather", title="Weather", summary="Forecasts for any place."),
        CodePlugin("maps", summary="Routes and distances."),
        CodePlugin("notes", visibility="always", title="Notes", summary="Durable notes."),
        CodePlugin("audit", visibility="silent"),
    )
    yield from serve_in_thread(create_app(oracle))


@pytest.fixture
def page() -> Iterator[Any]:
    yield from chromium_page(viewport={"width": 1200, "height": 900})


def send(page: Any, text: str) -> None:
    page.fill("#message", text)
    page.click("#send")


def test_the_welcome_says_what_the_oracle_can_do_from_its_plugins(
    page_url: str, page: Any, shots: Path
) -> None:
    expect = playwright_api.expect
    page.goto(page_url)

    welcome = page.locator(".welcome")
    expect(welcome.locator("h2")).to_have_text("What this oracle can do")
    expect(welcome.locator(".welcome-always li")).to_have_text(["Notes — Durable notes."])
    expect(welcome.locator(".welcome-on-demand")).to_have_text(
        "2 more capabilities it finds and loads when a request needs them: Weather, maps."
    )
    expect(welcome).not_to_contain_text("audit")  # silent plugins are not for people either
    page.screenshot(path=str(shots / "welcome.png"))
    assert page.evaluate("window.__csp") == []


def test_the_welcome_gives_way_to_the_conversation(
    page_url: str, page: Any, fake_openai: FakeOpenAI
) -> None:
    expect = playwright_api.expect
    fake_openai.script(Reply(content="Hello."))
    page.goto(page_url)
    expect(page.locator(".welcome")).to_be_visible()

    send(page, "Hi")

    expect(page.locator(".msg.assistant")).to_have_text("Hello.")
    expect(page.locator(".welcome")).to_have_count(0)


def test_answers_are_rendered_as_markdown_live_and_after_a_reload(
    page_url: str, page: Any, fake_openai: FakeOpenAI, shots: Path
) -> None:
    expect = playwright_api.expect
    answer = (
        "Rain in **Porto** all week:\n\n- Monday: `12 mm`\n- Tuesday: 3 mm\n\n"
        "| day | mm |\n|---|---|\n| Mon | 12 |\n\n[Source](https://open-meteo.com/)"
    )
    fake_openai.script(Reply(content=answer))
    page.goto(page_url)

    send(page, "Weather in Porto this week?")

    bubble = page.locator(".msg.assistant")
    expect(bubble).to_have_attribute("data-markdown", "rendered")
    for _ in range(2):
        expect(bubble.locator("strong")).to_have_text("Porto")
        expect(bubble.locator("li")).to_have_text(["Monday: 12 mm", "Tuesday: 3 mm"])
        expect(bubble.locator("li code")).to_have_text("12 mm")
        expect(bubble.locator("td")).to_have_text(["Mon", "12"])
        link = bubble.locator("a")
        expect(link).to_have_attribute("href", "https://open-meteo.com/")
        expect(link).to_have_attribute("target", "_blank")
        expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
        page.screenshot(path=str(shots / "markdown.png"))
        page.reload()  # the thread is in the URL: rebuilt from GET /threads/{id}
        expect(bubble).to_have_attribute("data-markdown", "rendered")
    assert page.evaluate("window.__csp") == []


class TestInjection:
    """Untrusted text, from the model or from a tool, never runs, loads or styles anything.

    The page's policy would block an inline script anyway, so the tests also require that
    no violation was reported: the sanitizer, not the policy, must have stopped it.
    """

    def check(self, page: Any, *, policy_quiet: bool = True) -> None:
        assert page.evaluate("window.__pwned") is None
        assert page.locator(FORBIDDEN).count() == 0
        hrefs = page.locator("#log a").evaluate_all("(links) => links.map((a) => a.href)")
        assert all(re.match(r"^(https?:|mailto:)", h) for h in hrefs if h), hrefs
        if policy_quiet:
            assert page.evaluate("window.__csp") == []

    def test_in_model_output(
        self, page_url: str, page: Any, fake_openai: FakeOpenAI, shots: Path
    ) -> None:
        expect = playwright_api.expect
        fake_openai.script(Reply(content="\n\n".join(PAYLOADS)))
        page.goto(page_url)

        send(page, "Say something dangerous")

        bubble = page.locator(".msg.assistant")
        expect(bubble).to_have_attribute("data-markdown", "rendered")
        expect(bubble).to_contain_text("<script>window.__pwned = 1</script>")  # shown as text
        page.screenshot(path=str(shots / "injection-model.png"), full_page=True)
        self.check(page)
        page.reload()
        expect(bubble).to_have_attribute("data-markdown", "rendered")
        self.check(page)

    def test_in_tool_calls_and_results(
        self, page_url: str, page: Any, fake_openai: FakeOpenAI
    ) -> None:
        expect = playwright_api.expect
        payload = " ".join(PAYLOADS[:8])
        fake_openai.script(
            Reply(tool_calls=[("notes_tool", {"text": payload})]),
            Reply(content="Done."),
        )
        page.goto(page_url)

        send(page, "Take a note")

        expect(page.locator(".msg.assistant")).to_have_text("Done.")
        result = page.locator(".tool-call[data-tool=notes_tool] .result")
        expect(result).to_have_text(f"notes_tool says {payload}")  # as text, not as HTML
        page.locator(".tool-call summary").click()
        self.check(page)
        page.reload()
        expect(result).to_have_text(f"notes_tool says {payload}")
        self.check(page)

    @pytest.mark.parametrize(
        "html",
        [
            '<p><img src="x" onerror="window.__pwned=1"></p>',
            '<p onclick="window.__pwned=1">x</p>',
            '<p><a href="javascript:window.__pwned=1">x</a></p>',
            "<script>window.__pwned=1</script>",
            '<p style="display:none">x</p>',
        ],
    )
    def test_html_the_servers_sanitizer_never_makes_is_refused_by_the_page(
        self, page_url: str, page: Any, fake_openai: FakeOpenAI, html: str
    ) -> None:
        # Should the server ever send more than its sanitizer allows, the page keeps the text.
        expect = playwright_api.expect
        fake_openai.script(Reply(content="**plain**"))
        page.route(
            "**/page/render",
            lambda route: route.fulfill(json={"html": [html]}, content_type="application/json"),
        )
        page.goto(page_url)

        send(page, "Hi")

        bubble = page.locator(".msg.assistant")
        expect(bubble).to_have_attribute("data-markdown", "refused")
        expect(bubble).to_have_text("**plain**")
        # Parsing it (inert) may make the policy report an inline handler or style: it blocks
        # them too. Nothing of it may be on the page or have run.
        self.check(page, policy_quiet=False)


def test_each_model_call_shows_its_prompt_cost_as_a_stacked_bar(
    page_url: str, page: Any, fake_openai: FakeOpenAI, shots: Path
) -> None:
    expect = playwright_api.expect
    fake_openai.script(
        Reply(tool_calls=[("load_capability", {"names": ["weather"]})]),
        Reply(tool_calls=[("weather_tool", {"text": "Porto"})]),
        Reply(content="Rain in Porto."),
    )
    page.goto(page_url)

    send(page, "Weather in Porto?")

    expect(page.locator(".msg.assistant")).to_have_text("Rain in Porto.")
    rows = page.locator(".call-cost")
    expect(rows).to_have_count(3)
    expect(page.locator(".cost-legend .legend")).to_have_text(
        ["Tier-1", "meta-tools", "tool schemas", "messages"]
    )
    costs = rows.evaluate_all(
        """(rows) => rows.map((row) => ({
            parts: Object.fromEntries([...row.querySelectorAll('.segment')].map((s) =>
                [s.className.replace('segment segment-', ''), Number(s.dataset.tokens)])),
            total: Number(row.querySelector('.call-total').textContent.split(' ')[0]),
            width: row.querySelector('.bar').getBoundingClientRect().width,
            segments: [...row.querySelectorAll('.segment')].map(
                (s) => s.getBoundingClientRect().width),
        }))"""
    )
    for cost in costs:
        assert list(cost["parts"]) == ["tier1", "meta_tools", "tool_schemas", "messages"]
        assert sum(cost["parts"].values()) == cost["total"]
        assert cost["parts"]["tier1"] > 0  # the always plugin's Tier-1 entry
        assert all(width > 0 for width in cost["segments"])
        # Each part's share of the bar is its share of the prompt (to a pixel per part).
        for part, width in zip(cost["parts"].values(), cost["segments"], strict=True):
            assert abs(width - cost["width"] * part / cost["total"]) < 1.5
    first, second, third = costs
    assert first["parts"]["meta_tools"] == second["parts"]["meta_tools"]
    assert second["parts"]["tool_schemas"] > first["parts"]["tool_schemas"]  # weather loaded
    assert third["parts"]["messages"] > first["parts"]["messages"]
    assert third["width"] > first["width"]  # one scale for the turn: the bigger call is longer
    label = rows.nth(0).locator(".bar")
    expect(label).to_have_attribute("aria-label", re.compile(r"^call 1: \d+ tokens \(Tier-1 \d+,"))
    page.screenshot(path=str(shots / "token-bars.png"))
    assert page.evaluate("window.__csp") == []
