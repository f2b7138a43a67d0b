"""The chat page at ``/``: plain HTML, CSS and JavaScript served from ``static/``.

No build step: the files are shipped as they are. The page talks to the JSON and SSE API
like any client; when the server needs a token it asks for one and keeps it in the browser.
Behind a reverse proxy that serves the server under a path (``oracle serve --root-path``),
the page's links and API calls start with that path: ``index.html`` names it where it says
``{{root}}``, and the script reads it from the ``oracle-root`` meta tag.

It is served with a strict Content-Security-Policy
(:data:`~oracle_core.server.security.PAGE_CSP`): no inline script or style, so keep both in
``static/``.

Answers are shown as Markdown: the page streams the text as plain text, then asks
``POST /page/render`` for its HTML, which the server renders and sanitizes
(:mod:`oracle_core.server.markdown`). Everything else the server sends (tool arguments and
results, errors, plugin texts) goes on the page as text, never as HTML.
"""

from __future__ import annotations

import asyncio
import html as markup
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import HTMLResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from oracle_core.server.context import ServerContext
from oracle_core.server.markdown import MarkdownRenderer
from oracle_core.server.security import PAGE_CSP

STATIC = Path(__file__).parent / "static"
"""The folder holding the page's files."""

RENDER_MAX_TEXTS = 1000
"""The most texts one ``POST /page/render`` may ask for (the body limit bounds their size)."""


class RenderRequest(BaseModel):
    """``POST /page/render``: Markdown texts to render, in order."""

    model_config = ConfigDict(extra="forbid")

    texts: Annotated[list[str], Field(max_length=RENDER_MAX_TEXTS)]


class Rendered(BaseModel):
    """The sanitized HTML of each text, in request order."""

    html: list[str]


def page_router(ctx: ServerContext) -> APIRouter:
    """``GET /``: the chat page (public); ``POST /page/render``: its Markdown (needs the token)."""
    router = APIRouter(include_in_schema=False)
    template = (STATIC / "index.html").read_text(encoding="utf-8")
    renderer = MarkdownRenderer()

    @router.get("/")
    async def index(request: Request) -> HTMLResponse:
        root = str(request.scope.get("root_path") or "").rstrip("/")
        return HTMLResponse(
            template.replace("{{root}}", markup.escape(root, quote=True)),
            headers={"Cache-Control": "no-cache", "Content-Security-Policy": PAGE_CSP},
        )

    @router.post("/page/render", dependencies=[Depends(ctx.auth)], response_model=Rendered)
    async def render(body: RenderRequest) -> dict[str, list[str]]:
        """Render answers as sanitized HTML (off the event loop: a long thread is work)."""
        return {"html": await asyncio.to_thread(renderer.render_all, body.texts)}

    return router


def static_mount() -> Mount:
    """``/static/``: the page's scripts and styles."""
    return Mount("/static", app=StaticFiles(directory=STATIC), name="static")
