"""The API docs pages, ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), served from files in
the package, never from a CDN: they work on a machine without internet access.

The viewers are FastAPI's own pages (``get_swagger_ui_html``, ``get_redoc_html``) pointed at
the copies of swagger-ui-dist and redoc in ``static/docs/`` (their versions and licences are
in ``oracle_core/licenses/THIRD-PARTY.txt``), with everything that would reach another site
turned off: Swagger UI's validator badge and ReDoc's Google fonts; a Content-Security-Policy
(:func:`~oracle_core.server.security.docs_csp`) stops what cannot be turned off (ReDoc's logo
on redoc.ly) before it leaves the browser. Every URL starts with
the request's root path, so the pages work behind a reverse proxy that serves the oracle
under a path (``oracle serve --root-path``). Neither page is in the OpenAPI document.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from starlette.responses import HTMLResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from oracle_core.server.security import docs_csp

DOCS_ASSETS = Path(__file__).parent / "static" / "docs"
"""The folder holding Swagger UI's and ReDoc's files."""

ASSETS_PATH = "/static/docs"
"""Where :data:`DOCS_ASSETS` is served."""


def docs_router(title: str, openapi_url: str) -> APIRouter:
    """``GET /docs`` and ``GET /redoc`` for the OpenAPI document at ``openapi_url``; both public."""
    router = APIRouter(include_in_schema=False)

    @router.get("/docs")
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = _root(request)
        return _with_policy(
            get_swagger_ui_html(
                openapi_url=root + openapi_url,
                title=f"{title} - API docs",
                swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
                swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
                swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon-32x32.png",
                oauth2_redirect_url=None,
                swagger_ui_parameters={"validatorUrl": None},  # the badge asks swagger.io
            )
        )

    @router.get("/redoc")
    async def redoc(request: Request) -> HTMLResponse:
        root = _root(request)
        return _with_policy(
            get_redoc_html(
                openapi_url=root + openapi_url,
                title=f"{title} - API reference",
                redoc_js_url=f"{root}{ASSETS_PATH}/redoc.standalone.js",
                redoc_favicon_url=f"{root}{ASSETS_PATH}/favicon-32x32.png",
                with_google_fonts=False,
            )
        )

    return router


def docs_mount() -> Mount:
    """``/static/docs/``: the viewers' scripts, styles and icon."""
    return Mount(ASSETS_PATH, app=StaticFiles(directory=DOCS_ASSETS), name="docs-assets")


def _with_policy(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = docs_csp(bytes(page.body).decode())
    return page


def _root(request: Request) -> str:
    return str(request.scope.get("root_path") or "").rstrip("/")
