"""Plugin routes under /plugins/<name>/: served, protected unless public, never shadowing."""

from __future__ import annotations

import re

import pytest
from starlette.requests import Request

from oracle_core import Route
from oracle_core.server import create_app

AUTH = {"Authorization": "Bearer s3cret"}


async def _ok(request: Request) -> dict[str, bool]:
    return {"ok": True}


async def test_a_plugin_route_is_served_under_its_prefix_and_reaches_the_oracle(
    serve, kiosk
) -> None:
    served = await serve(kiosk, tokens=("s3cret",))

    response = await served.client.get("/plugins/kiosk/status", headers=AUTH)

    assert response.status_code == 200
    assert response.json() == {"plugin": "kiosk", "plugins": ["kiosk"]}


async def test_a_route_may_answer_with_a_response_and_take_path_parameters(serve, kiosk) -> None:
    served = await serve(kiosk, tokens=("s3cret",))

    got = await served.client.get("/plugins/kiosk/echo/hi", headers=AUTH)
    posted = await served.client.post("/plugins/kiosk/echo/there", headers=AUTH)
    wrong_method = await served.client.delete("/plugins/kiosk/echo/x", headers=AUTH)

    assert (got.text, got.headers["content-type"]) == ("echo hi", "text/plain; charset=utf-8")
    assert posted.text == "echo there"
    assert wrong_method.status_code == 405


async def test_plugin_routes_need_the_token_unless_marked_public(serve, kiosk) -> None:
    served = await serve(kiosk, tokens=("s3cret",))

    protected = await served.client.get("/plugins/kiosk/status")
    public = await served.client.get("/plugins/kiosk/hello")

    assert protected.status_code == 401
    assert protected.json()["error"]["type"] == "unauthorized"
    assert public.json() == {"hello": "world"}


async def test_a_route_that_raises_is_a_500_naming_the_plugin(serve, kiosk) -> None:
    served = await serve(kiosk, tokens=("s3cret",))

    response = await served.client.get("/plugins/kiosk/broken", headers=AUTH)

    assert response.status_code == 500
    assert response.json()["error"] == {
        "type": "plugin_error",
        "message": "route /plugins/kiosk/broken of plugin 'kiosk' raised RuntimeError (see the server log)",
    }


async def test_startup_and_shutdown_hooks_run_once(make_oracle, kiosk, fake_openai) -> None:
    import httpx

    from oracle_core.testing.openai_server import Reply

    fake_openai.script(Reply.text("a"), Reply.text("b"))
    oracle = make_oracle(kiosk)
    app = create_app(oracle)

    async with app.router.lifespan_context(app):
        assert kiosk.events == ["startup"]
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as client:
            for message in ("one", "two"):
                response = await client.post("/threads/t/runs", json={"message": message})
                assert response.status_code == 200, response.text

    assert kiosk.events == ["startup", "shutdown"]


def test_two_routes_of_one_plugin_with_the_same_method_and_path_leave_its_routes_out(
    make_oracle, routes_plugin
) -> None:
    plugin = routes_plugin(
        name="twice",
        routes=[Route("/items/{id}", _ok), Route("/items/{key}", _ok, methods=("POST", "GET"))],
    )

    app = create_app(make_oracle(plugin))

    [failure] = app.state.server.route_failures
    assert failure.plugin == "twice"
    assert str(failure) == (
        "plugin 'twice' route GET /plugins/twice/items/{key} clashes with route GET "
        "/plugins/twice/items/{id} of plugin 'twice': give each route of a plugin its own "
        "method and path"
    )
    assert not [r for r in app.router.routes if getattr(r, "path", "").startswith("/plugins/twice")]


BAD_PATHS = ["/../../threads", "/a//b", "/./x", "/x?y=1", "/a/../b", "/x#y", "/a\\b", "/.."]


@pytest.mark.parametrize("path", BAD_PATHS)
async def test_a_route_path_that_could_read_as_another_place_is_left_out_and_the_rest_served(
    serve, routes_plugin, path: str
) -> None:
    async def fine(request: Request) -> str:
        return "fine"

    served = await serve(
        routes_plugin(name="sneaky", routes=[Route("/ok", fine), Route(path, _ok)]),
        routes_plugin(name="honest", routes=[Route("/ok", fine)]),
    )

    [failure] = served.app.state.server.route_failures
    assert re.search(r"plugin 'sneaky' has route path .* not a plain path", str(failure))
    assert (await served.client.get("/plugins/honest/ok")).json() == "fine"
    assert (await served.client.get("/plugins/sneaky/ok")).status_code == 404
    assert (await served.client.get("/health")).status_code == 200
    listed = (await served.client.get("/plugins")).json()["failures"]
    assert [f["plugin"] for f in listed] == ["sneaky"]


async def test_plugins_with_the_same_route_path_do_not_shadow_each_other(
    serve, routes_plugin
) -> None:
    async def first(request: Request) -> str:
        return "first"

    async def second(request: Request) -> str:
        return "second"

    served = await serve(
        routes_plugin(name="one", routes=[Route("/", first)]),
        routes_plugin(name="two", routes=[Route("/", second)]),
    )

    assert (await served.client.get("/plugins/one/")).json() == "first"
    assert (await served.client.get("/plugins/two/")).json() == "second"
    assert (await served.client.get("/plugins")).json()["plugins"][0]["name"] == "one"


def test_a_plugin_route_equal_to_a_core_route_is_left_out_naming_both(make_oracle, kiosk) -> None:
    from starlette.routing import Route as CoreRoute

    from oracle_core.server.auth import BearerAuth
    from oracle_core.server.plugin_routes import plugin_routes

    core = [CoreRoute("/plugins/kiosk/status", _ok, methods=["GET"])]

    mounted = plugin_routes(make_oracle(kiosk).registry, BearerAuth(), core)

    assert mounted.routes == []
    [failure] = mounted.failures
    assert "plugin 'kiosk' route GET /plugins/kiosk/status clashes with the core route " in str(
        failure
    )
