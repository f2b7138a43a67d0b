"""Plugin routes from ``oracle_routes``, mounted under ``/plugins/<plugin-name>/``.

Why a plugin cannot shadow anything: every plugin route lives below its own prefix
``/plugins/<name>/``; plugin names are unique and contain no ``/``, and the core's only
route near there is ``GET /plugins`` itself, so no two plugins share a path and no plugin
path is a core path. What remains is checked when the app is made, and fails naming the
plugin: a path with ``.``, ``..`` or empty segments (which would read as another place),
two routes of one plugin with the same method and path (path parameter names aside), and,
as a guard for future core routes, any plugin route equal to a core route.

Routes need the server's bearer token unless the plugin marks them ``public=True``. They are
served only while their plugin is part of the running oracle: a plugin whose
``oracle_startup`` failed is gone from ``oracle.registry`` once the oracle has started, and
its routes answer 503 naming the plugin. An endpoint may return a Starlette ``Response`` or any JSON-serialisable value; one that raises
is answered with a 500 naming the plugin (details in the server log). The oracle is at
``request.app.state.oracle``.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fastapi.encoders import jsonable_encoder
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute
from starlette.routing import Route as StarletteRoute

from oracle_core.authoring.routes import Route
from oracle_core.errors import PluginConflictError
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.server.auth import BearerAuth
from oracle_core.server.errors import ApiError

log = logging.getLogger("oracle_core.server")

PREFIX = "/plugins"
"""Where plugin routes live: ``/plugins/<plugin-name>/<route path>``."""

_PARAM = re.compile(r"\{([^}:]*)(:[^}]*)?\}")


def shape(path: str) -> str:
    """``path`` with parameter names erased: ``/a/{id:int}`` and ``/a/{n:int}`` are one shape."""
    return _PARAM.sub(lambda m: "{" + (m.group(2) or "") + "}", path)


def route_keys(routes: Iterable[BaseRoute]) -> dict[tuple[str, str], str]:
    """``(method, path shape)`` of each given app route, mapped to its path."""
    keys: dict[tuple[str, str], str] = {}
    for route in routes:
        path = getattr(route, "path", None)
        if not isinstance(path, str):
            continue
        for method in getattr(route, "methods", None) or ["*"]:
            keys[(method, shape(path))] = path
    return keys


def full_path(plugin: str, route: Route) -> str:
    """The URL path a plugin's route is served at."""
    return f"{PREFIX}/{plugin}{route.path}"


def _check_path(plugin: Plugin, route: Route) -> None:
    segments = route.path.split("/")[1:]
    bad = [s for s in segments[:-1] if s in ("", ".", "..")] + [
        s for s in segments[-1:] if s in (".", "..")
    ]
    if bad or any(c in route.path for c in "?#\\"):
        raise PluginConflictError(
            f"plugin {plugin.name!r} has route path {route.path!r}, which is not a plain path "
            "(no '.', '..' or empty segments, no '?', '#' or '\\'): fix the path in its "
            "oracle_routes",
            plugin=plugin.name,
        )


@dataclass(frozen=True)
class MountedRoutes:
    """The plugin routes the server mounts, and the plugins whose routes it left out.

    Attributes:
        routes: the Starlette routes to add to the app.
        failures: one error per plugin left out, naming the path and the fix.
    """

    routes: list[StarletteRoute] = field(default_factory=list)
    failures: list[PluginConflictError] = field(default_factory=list)


def plugin_routes(registry: Registry, auth: BearerAuth, core: Iterable[BaseRoute]) -> MountedRoutes:
    """Starlette routes for every plugin route, after checking that none shadows another.

    A plugin with a route that is not a plain path, or that clashes with a core route or
    an earlier plugin's, has none of its routes mounted; the error is reported, and the
    server and every other plugin's routes go on.
    """
    taken = {key: f"the core route {path}" for key, path in route_keys(core).items()}
    mounted = MountedRoutes()
    for plugin in registry:
        claims: dict[tuple[str, str], str] = {}
        made: list[StarletteRoute] = []
        try:
            for route in plugin.routes:
                _check_path(plugin, route)
                path = full_path(plugin.name, route)
                methods = sorted({m.upper() for m in route.methods})
                for method in methods:
                    key = (method, shape(path))
                    owner = taken.get(key) or taken.get(("*", key[1])) or claims.get(key)
                    if owner is not None:
                        raise PluginConflictError(
                            f"plugin {plugin.name!r} route {method} {path} clashes with "
                            f"{owner}: give each route of a plugin its own method and path",
                            plugin=plugin.name,
                        )
                    claims[key] = f"route {method} {path} of plugin {plugin.name!r}"
                made.append(
                    StarletteRoute(
                        path,
                        _endpoint(plugin.name, route, path, auth),
                        methods=methods,
                        name=f"plugin:{plugin.name}:{route.name or _name(route)}",
                    )
                )
        except PluginConflictError as error:
            log.error("%s; its routes are not served", error)
            mounted.failures.append(error)
            continue
        taken.update(claims)
        mounted.routes.extend(made)
    return mounted


def _name(route: Route) -> str:
    return str(getattr(route.endpoint, "__name__", "endpoint"))


def _endpoint(plugin: str, route: Route, path: str, auth: BearerAuth) -> Any:
    where = f"route {path} of plugin {plugin!r}"

    async def endpoint(request: Request) -> Response:
        if not route.public:
            auth.check(request)
        if plugin not in request.app.state.oracle.registry:
            raise ApiError(
                503,
                "plugin_unavailable",
                f"plugin {plugin!r} is not running (its startup failed; see the server log), "
                f"so {path} is not served",
            )
        try:
            if inspect.iscoroutinefunction(route.endpoint):
                value = await route.endpoint(request)
            else:
                value = await run_in_threadpool(route.endpoint, request)
                if inspect.isawaitable(value):
                    value = await value
        except (HTTPException, ApiError):
            raise
        except Exception as error:
            log.exception("%s raised", where)
            raise ApiError(
                500, "plugin_error", f"{where} raised {type(error).__name__} (see the server log)"
            ) from error
        if isinstance(value, Response):
            return value
        try:
            return JSONResponse(jsonable_encoder(value))
        except (TypeError, ValueError) as error:
            raise ApiError(
                500,
                "plugin_error",
                f"{where} returned a {type(value).__name__}, which is not JSON-serialisable: "
                "return a Response or plain data",
            ) from error

    endpoint.__name__ = _name(route)
    return endpoint
