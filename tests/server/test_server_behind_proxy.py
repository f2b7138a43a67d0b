"""``oracle serve`` behind a reverse proxy: the root path (``--root-path``), the proxy's
``X-Forwarded-For`` / ``X-Forwarded-Proto`` (``--proxy-headers``, ``--forwarded-allow-ips``),
and the flags themselves, checked before anything starts."""

from __future__ import annotations

import json
import os
import random
import signal
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser import serve_in_thread
from proxy import StrippingProxy
from starlette.requests import Request
from support import serve_app, start_serve

from oracle_core import Route
from oracle_core.server import create_app
from oracle_core.server.serving import Proxy, check_root_path
from oracle_core.testing.openai_server import FakeOpenAI


async def _where(request: Request) -> dict[str, Any]:
    """What a plugin route sees of where it is: the URLs it would build, and the client."""
    assert request.client is not None
    return {
        "client": request.client.host,
        "base_url": str(request.base_url),
        "docs": str(request.url_for("swagger_ui")),
    }


@pytest.fixture
def proxied(make_oracle, routes_plugin) -> Iterator[Any]:
    """Make ``(proxy options) -> the proxy's /oracle URL`` for an oracle with a ``/where`` route."""
    servers: list[Any] = []

    def start(proxy: Proxy) -> str:
        plugin = routes_plugin(routes=[Route("/where", _where, public=True)])
        served = serve_app(create_app(make_oracle(plugin)), proxy=proxy)
        backend = served.__enter__()
        front = serve_in_thread(StrippingProxy(backend, "/oracle", client="203.0.113.7"))
        servers.append((served, front))
        return f"{next(front)}/oracle"

    yield start
    for served, front in servers:
        next(front, None)  # stops the proxy
        served.__exit__(None, None, None)


def test_behind_a_trusted_proxy_the_app_sees_the_client_the_scheme_and_the_path(proxied) -> None:
    url = proxied(Proxy(root_path="/oracle"))  # the proxy is on 127.0.0.1: trusted by default

    seen = httpx.get(f"{url}/plugins/kiosk/where").json()

    assert seen["client"] == "203.0.113.7"
    assert seen["base_url"].startswith("https://") and seen["base_url"].endswith("/oracle/")
    assert seen["docs"].endswith("/oracle/docs")


@pytest.mark.parametrize(
    "proxy",
    [Proxy("/oracle", proxy_headers=False), Proxy("/oracle", forwarded_allow_ips="10.0.0.9")],
)
def test_forwarded_headers_from_an_untrusted_address_are_ignored(proxied, proxy: Proxy) -> None:
    seen = httpx.get(f"{proxied(proxy)}/plugins/kiosk/where").json()

    assert seen["client"] == "127.0.0.1"
    assert seen["base_url"].startswith("http://")


@pytest.mark.parametrize("seed", range(3))
def test_a_root_path_is_a_plain_path_or_refused_naming_the_rule(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "._~%-"

    def word() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))

    for _ in range(30):
        good = "".join(f"/{word()}" for _ in range(rng.randint(1, 3)))
        assert check_root_path(good) == good
        assert check_root_path(good + "/") == good
        cut = rng.randrange(1, len(good) + 1)
        bad = rng.choice([
            good[1:] or "x",  # no leading /
            good[:cut] + rng.choice([" ", '"', "'", "<", ">", "?", "#", "\\", "\n", "\x00", "é", "//"]) + good[cut:],
            "/" + "a" * 201,
        ])  # fmt: skip
        with pytest.raises(
            ValueError, match=r"root path .* is not valid: use a path such as /oracle"
        ):
            check_root_path(bad)
    assert check_root_path("") == check_root_path("/") == ""


# -- the command -----------------------------------------------------------------------------


def serve_env(tmp_path: Path, fake: FakeOpenAI, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "OPENAI_", "OTEL_"))}
    env.update(
        ORACLE_HOME=str(tmp_path), ORACLE_LOAD_PLUGINS="", ORACLE_MODEL="openai/fake-model",
        ORACLE_API_BASE=fake.url, OPENAI_API_KEY="sk-fake", **extra,
    )  # fmt: skip
    return env


@pytest.mark.slow  # a subprocess
def test_a_bad_root_path_stops_serve_before_it_starts(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "oracle_core", "serve", "--port", "0"],
        env=serve_env(tmp_path, fake_openai, ORACLE_ROOT_PATH="oracle path"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    assert done.returncode == 2
    assert done.stderr.strip() == (
        "oracle: root path 'oracle path' is not valid: use a path such as /oracle: segments "
        "of letters, digits and . _ ~ % -, each after a /"
    )


def as_from_a_shell() -> None:
    """In the child, before exec: Ctrl-C deliverable, as a shell starts a command."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow  # a subprocess
def test_serve_takes_the_proxy_flags_logs_json_and_stops_on_ctrl_c_with_exit_0(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    args = ("--root-path", "/oracle/", "--forwarded-allow-ips", "127.0.0.1", "--log-format", "json")
    env = serve_env(tmp_path, fake_openai)
    process, url, output = start_serve(
        "proxied", env, wait=60, args=args, preexec_fn=as_from_a_shell
    )
    try:
        page = httpx.get(
            f"{url}/", headers={"X-Forwarded-For": "198.51.100.4", "X-Request-ID": "edge-1"}
        )
        process.send_signal(signal.SIGINT)
        process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
    lines = "".join(output).splitlines()

    assert process.returncode == 0
    assert "Aborted!" not in lines
    banner = next(line for line in lines if line.startswith("oracle: serving"))
    assert banner.endswith("behind a proxy at /oracle/)")
    assert 'src="/oracle/static/app.js"' in page.text
    assert page.headers["x-request-id"] == "edge-1"
    access = [
        json.loads(line) for line in lines if line.startswith("{") and '"uvicorn.access"' in line
    ]
    assert [(a["client"], a["path"], a["status"], a["request_id"]) for a in access] == [
        ("198.51.100.4:0", "/oracle/", 200, "edge-1")
    ]
