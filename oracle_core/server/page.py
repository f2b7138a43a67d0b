"""The chat page at ``/``: plain HTML, CSS and JavaScript served from ``static/``.

No build step: the files are shipped as they are. The page talks to the JSON and SSE API
like any client; when the server needs a token it asks for one and keeps it in the browser.
It is served with a strict Content-Security-Policy
(:data:`~oracle_core.server.security.PAGE_CSP`): no inline script or style, so keep both in
``static/``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from starlette.responses import HTMLResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from oracle_core.server.security import PAGE_CSP

STATIC = Path(__file__).parent / "static"
"""The folder holding the page's files."""


def page_router() -> APIRouter:
    """``GET /``: the chat page (public; the API calls it makes need the token)."""
    router = APIRouter(include_in_schema=False)
    html = (STATIC / "index.html").read_text(encoding="utf-8")

    @router.get("/")
    async def index() -> HTMLResponse:
        return HTMLResponse(
            html, headers={"Cache-Control": "no-cache", "Content-Security-Policy": PAGE_CSP}
        )

    return router


def static_mount() -> Mount:
    """``/static/``: the page's scripts and styles."""
    return Mount("/static", app=StaticFiles(directory=STATIC), name="static")
