"""Driving the chat page in a real browser: Debian's ``chromium`` through Playwright.

No browser is downloaded: Playwright launches ``/usr/bin/chromium`` (``apt-get install
chromium``), and the tests that need it are skipped where it is absent.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
"""Debian's Chromium, which the page tests drive."""

ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
"""Chromium switches: headless, and nothing that reaches for the network on its own."""

BROWSER_TEST = [
    pytest.mark.slow,  # a browser: `pytest -m 'not slow'` skips it
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"{CHROMIUM} is absent: apt-get install chromium (Debian's package; no browser download)",
    ),
]
"""The marks of a browser test module: ``pytestmark = BROWSER_TEST``."""

RECORD_CSP = (
    "window.__csp = [];"
    "document.addEventListener('securitypolicyviolation', (e) =>"
    " window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));"
)
"""An init script: every Content-Security-Policy violation on the page lands in window.__csp."""


def serve_in_thread(app: Any) -> Iterator[str]:
    """Run ``app`` with uvicorn on 127.0.0.1 in a thread; yield its URL once it serves."""
    import uvicorn

    started = threading.Event()

    class Server(uvicorn.Server):
        async def startup(self, *args: Any, **kwargs: Any) -> None:
            await super().startup(*args, **kwargs)
            started.set()

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert started.wait(30), "uvicorn did not start"
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(30)


def chromium_page(**options: Any) -> Iterator[Any]:
    """A Playwright page in headless Chromium that records CSP violations in ``window.__csp``.

    ``options`` go to ``browser.new_page`` (``viewport={...}``, ...).
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(**options)
            page.add_init_script(RECORD_CSP)
            yield page
        finally:
            browser.close()


def screenshot_folder(tmp_path: Path) -> Path:
    """Where a test's screenshots go: ``$ORACLE_SCREENSHOTS`` if set, else under ``tmp_path``."""
    folder = Path(os.environ.get("ORACLE_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
