"""A stand-in for Open-Meteo on 127.0.0.1 that answers with recorded responses.

The stub serves the JSON files in ``fixtures/`` the way the real API would: the geocoding
search honours ``count``, the forecast honours ``forecast_days`` and the unit parameters.
Path prefixes make it misbehave on purpose:

- ``/slow/...`` holds the answer until the test ends (for timeouts);
- ``/broken/...`` answers HTTP 400 with Open-Meteo's error body;
- ``/down/...`` answers HTTP 503 with an HTML page.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import oracle_plugin_weather
import pytest

from oracle_core import Oracle
from oracle_core.testing import OracleFactory

FIXTURES = Path(__file__).parent / "fixtures"
_IMPERIAL = {
    "temperature_unit": "fahrenheit",
    "wind_speed_unit": "mph",
    "precipitation_unit": "inch",
}


def _recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _geocoding(query: dict[str, str]) -> tuple[int, dict[str, Any]]:
    name = query.get("name", "").lower()
    recording = name if name in ("berlin", "springfield") else "no_results"
    answer = _recorded(f"geocoding_{recording}")
    if "results" in answer:
        answer["results"] = answer["results"][: int(query.get("count", "10"))]
    return 200, answer


def _forecast(query: dict[str, str]) -> tuple[int, dict[str, Any]]:
    if "latitude" not in query or "longitude" not in query:
        return 400, {"error": True, "reason": "Parameter 'latitude' and 'longitude' must be set"}
    sent_units = {key: query[key] for key in _IMPERIAL if key in query}
    if sent_units == _IMPERIAL:
        system = "imperial"
    elif not sent_units:
        system = "metric"
    else:
        return 400, {"error": True, "reason": f"No recording for mixed units {sent_units}"}
    if "current" in query:
        return 200, _recorded(f"forecast_current_{system}")
    if "daily" in query:
        answer = _recorded(f"forecast_daily_{system}")
        days = int(query.get("forecast_days", "7"))
        answer["daily"] = {key: values[:days] for key, values in answer["daily"].items()}
        return 200, answer
    return 400, {"error": True, "reason": "No data is requested: set 'current' or 'daily'"}


class _Stub(ThreadingHTTPServer):
    daemon_threads = True
    release: threading.Event


class _Handler(BaseHTTPRequestHandler):
    server: _Stub

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query))
        path = url.path
        if path.startswith("/slow/"):
            self.server.release.wait(timeout=30)  # set when the test that asked ends
            path = path.removeprefix("/slow")
        if path.startswith("/broken/"):
            self._send(400, json.dumps(_recorded("forecast_error_400")))
        elif path.startswith("/down/"):
            self._send(503, "<html><body>503 Service Unavailable</body></html>", "text/html")
        elif path == "/v1/search":
            self._send(*_json(_geocoding(query)))
        elif path == "/v1/forecast":
            self._send(*_json(_forecast(query)))
        else:
            self._send(404, json.dumps({"error": True, "reason": "Not Found"}))

    def _send(self, status: int, body: str, content_type: str = "application/json") -> None:
        payload = body.encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", f"{content_type}; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the client gave up waiting (the timeout tests); nobody is left to answer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the test output clean


def _json(answer: tuple[int, dict[str, Any]]) -> tuple[int, str]:
    status, data = answer
    return status, json.dumps(data, ensure_ascii=False)


@pytest.fixture(scope="session")
def _stub() -> Iterator[_Stub]:
    server = _Stub(("127.0.0.1", 0), _Handler)
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def open_meteo(_stub: _Stub) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT``) of a running Open-Meteo stub."""
    yield f"http://127.0.0.1:{_stub.server_address[1]}"
    # Let go of answers a timeout test held, and hold the next test's afresh.
    held, _stub.release = _stub.release, threading.Event()
    held.set()


@pytest.fixture
def weather_config(open_meteo: str) -> dict[str, Any]:
    """The plugin's ``[plugins.weather]`` settings, pointing at the stub."""
    return {
        "geocoding_url": f"{open_meteo}/v1/search",
        "forecast_url": f"{open_meteo}/v1/forecast",
        "timeout": 5,
    }


@pytest.fixture
def weather(oracle_factory: OracleFactory, weather_config: dict[str, Any]) -> Oracle:
    """An oracle with the weather plugin, its settings pointing at the stub."""
    return oracle_factory(oracle_plugin_weather, config={"weather": weather_config})


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port where nothing listens: connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Bound but never listening, so no other test can take the port meanwhile.
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])
