"""Approving or denying a call from the chat page, in headless Chromium.

Screenshots go to the test's ``tmp_path``, or to ``$ORACLE_SCREENSHOTS`` when it is set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser import BROWSER_TEST, chromium_page, screenshot_folder, serve_in_thread

from oracle_core import PluginManifest, Tool, hookimpl, tool
from oracle_core.server import create_app
from oracle_core.testing.openai_server import FakeOpenAI, Reply

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pytestmark = BROWSER_TEST


class Files:
    """A plugin whose one tool needs a person's approval; ``deleted`` says what it did."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="files", summary="Deletes files.", when_to_use=["files"], visibility="always"
        )

    @hookimpl
    def oracle_tools(self) -> list[Tool]:
        @tool(approval=True)
        def delete_file(path: str) -> str:
            """Delete a file."""
            self.deleted.append(path)
            return f"deleted {path}"

        return [delete_file]


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    return screenshot_folder(tmp_path)


@pytest.fixture
def files() -> Files:
    return Files()


@pytest.fixture
def page_url(make_oracle, fake_openai: FakeOpenAI, files: Files) -> Iterator[str]:
    import litellm  # noqa: F401  (its first import takes seconds: not inside an expectation)

    yield from serve_in_thread(create_app(make_oracle(files)))


@pytest.fixture
def page() -> Iterator[Any]:
    yield from chromium_page(viewport={"width": 1200, "height": 800})


def ask_to_delete(page: Any, page_url: str, fake_openai: FakeOpenAI, answer: str) -> Any:
    """Send a message whose call waits for approval; return the approval card."""
    fake_openai.script(
        Reply(tool_calls=[("delete_file", {"path": "notes.txt"})]), Reply(content=answer)
    )
    page.goto(page_url)
    page.fill("#message", "Delete notes.txt")
    page.click("#send")
    card = page.locator(".approval")
    playwright_api.expect(card.locator(".approval-title")).to_have_text(
        "Approval needed: files.delete_file"
    )
    return card


def test_approving_runs_the_call_and_shows_the_resumed_answer(
    page_url: str, page: Any, fake_openai: FakeOpenAI, files: Files, shots: Path
) -> None:
    expect = playwright_api.expect
    card = ask_to_delete(page, page_url, fake_openai, "Deleted **notes.txt**.")
    expect(card.locator(".arguments")).to_have_text('{\n  "path": "notes.txt"\n}')
    expect(page.locator(".turn-waiting")).to_have_text("waiting for a person's approval")
    assert files.deleted == []
    page.screenshot(path=str(shots / "approval-pending.png"))

    card.locator(".approve").click()

    expect(card.locator(".approval-outcome")).to_have_text("approved")
    expect(page.locator(".turn-waiting")).to_have_count(0)
    expect(page.locator(".tool-call[data-tool=delete_file] .result")).to_have_text(
        "deleted notes.txt"
    )
    answer = page.locator(".msg.assistant")
    expect(answer).to_have_attribute("data-markdown", "rendered")
    expect(answer.locator("strong")).to_have_text("notes.txt")
    expect(page.locator(".call-cost")).to_have_count(2)  # the first call and the resumed one
    expect(card.locator("button")).to_have_count(0)  # decided once: nothing left to press
    assert files.deleted == ["notes.txt"]
    page.screenshot(path=str(shots / "approval-approved.png"))
    assert page.evaluate("window.__csp") == []


def test_denying_with_a_reason_tells_the_model_and_runs_nothing(
    page_url: str, page: Any, fake_openai: FakeOpenAI, files: Files
) -> None:
    expect = playwright_api.expect
    card = ask_to_delete(page, page_url, fake_openai, "All right, I kept it.")

    card.locator(".approval-reason").fill("keep it for now")
    card.locator(".deny").click()

    expect(card.locator(".approval-outcome")).to_have_text("denied")
    expect(page.locator(".msg.assistant")).to_have_text("All right, I kept it.")
    assert files.deleted == []
    told = fake_openai.requests[-1].messages[-1]
    assert told["role"] == "tool" and "keep it for now" in told["content"]


def test_a_pending_approval_is_shown_again_after_a_reload_and_can_be_decided(
    page_url: str, page: Any, fake_openai: FakeOpenAI, files: Files
) -> None:
    expect = playwright_api.expect
    ask_to_delete(page, page_url, fake_openai, "Deleted.")

    page.reload()

    card = page.locator(".approval")
    expect(card.locator(".approval-title")).to_have_text("Approval needed: files.delete_file")
    card.locator(".approve").click()
    expect(card.locator(".approval-outcome")).to_have_text("approved")
    expect(page.locator(".msg.assistant")).to_have_text("Deleted.")
    assert files.deleted == ["notes.txt"]


def test_an_approved_turn_shows_one_usage_line_with_the_whole_runs_tokens(
    page_url: str, page: Any, fake_openai: FakeOpenAI
) -> None:
    expect = playwright_api.expect
    card = ask_to_delete(page, page_url, fake_openai, "Deleted.")
    expect(page.locator(".turn-usage")).to_have_count(1)  # what the waiting part used

    card.locator(".approve").click()

    expect(page.locator(".msg.assistant")).to_have_text("Deleted.")
    thread = page.evaluate("decodeURIComponent(location.hash.split('=')[1])")
    (run,) = httpx.get(f"{page_url}/threads/{thread}").json()["runs"]
    usage = run["usage"]
    line = (
        f"used {usage['total_tokens']} tokens this turn "
        f"({usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion)"
    )
    expect(page.locator(".turn-usage")).to_have_count(1)
    expect(page.locator(".turn-usage")).to_have_text(line)
    # below the resumed part's answer, where the turn ends
    expect(page.locator(".turn > :last-child")).to_have_class("turn-usage")

    page.reload()

    expect(page.locator(".turn-usage")).to_have_text(line)
