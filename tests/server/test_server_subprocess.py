"""A real ``oracle serve`` process on 127.0.0.1, against the scripted model over HTTP.

One server process is shared by the module (each start costs a second, plus litellm's
import on the first model call); the lifecycle tests start their own.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx
import openai
import pytest
from support import SitePackages

from oracle_core import SQLiteCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest

pytestmark = pytest.mark.slow  # runs subprocesses: `pytest -m 'not slow'` skips it

PLUGIN = '''
import os
from pathlib import Path
from starlette.responses import PlainTextResponse
from oracle_core import hookimpl, PluginManifest, Route, tool

@tool
def stamp(text: str) -> str:
    """Stamp a text."""
    return "stamped " + text

async def status(request):
    return {"threads": await request.app.state.oracle.checkpointer.threads()}

async def hello(request):
    return PlainTextResponse("hello from kiosk")

def _log(line):
    with Path(os.environ["KIOSK_LOG"]).open("a") as handle:
        handle.write(line + "\\n")

@hookimpl
def oracle_manifest():
    return PluginManifest(name="kiosk", summary="A kiosk.", when_to_use=["tests"], visibility="always")

@hookimpl
def oracle_tools():
    return [stamp]

@hookimpl
def oracle_routes():
    return [Route("/status", status), Route("/hello", hello, public=True)]

@hookimpl
def oracle_startup():
    _log("startup")

@hookimpl
async def oracle_shutdown():
    _log("shutdown")
'''


@dataclass
class Server:
    """A running ``oracle serve``."""

    process: subprocess.Popen[str]
    url: str
    log: Path
    stderr: list[str]


def _pump(stream: IO[str], sink: Callable[[str], None]) -> None:
    for line in stream:
        sink(line)
    sink("")  # end of output


def start_server(
    root: Path,
    fake: FakeOpenAI,
    name: str,
    *args: str,
    env: dict[str, str] | None = None,
) -> Server:
    """Start ``oracle serve --port 0 <args>`` and wait for its banner (printed once it serves).

    ``name`` keeps each server's home folder and plugin log apart; ``env`` adds to (or
    overrides) its environment. Both pipes are read in threads, so the server can never
    stall on a full pipe.
    """
    log = root / f"{name}.log"
    log.write_text("")
    environment = {
        **os.environ,
        "PYTHONPATH": str(root),
        "ORACLE_HOME": str(root / name),
        "ORACLE_LOAD_PLUGINS": "kiosk",
        "ORACLE_MODEL": "openai/fake-model",
        "ORACLE_API_BASE": fake.url,
        "OPENAI_API_KEY": "sk-fake",
        "ORACLE_API_TOKEN": "tok-one,tok-two",
        "KIOSK_LOG": str(log),
        **(env or {}),
    }
    command = [
        sys.executable,
        "-m",
        "oracle_core",
        "serve",
        "--port",
        "0",
        "--log-level",
        "warning",
        *args,
    ]
    process = subprocess.Popen(
        command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    stderr: list[str] = []
    threading.Thread(target=_pump, args=(process.stdout, lines.put), daemon=True).start()
    threading.Thread(target=_pump, args=(process.stderr, stderr.append), daemon=True).start()
    try:
        banner = lines.get(timeout=60)
    except queue.Empty:
        banner = ""
    if not banner.startswith("oracle: serving"):
        process.kill()
        process.wait(10)
        pytest.fail(f"oracle serve did not start: {banner}{''.join(stderr)}")
    url = banner.split(" on ", 1)[1].split(" ", 1)[0]
    return Server(process, url, log, stderr)


def stop_server(server: Server) -> None:
    """Stop with SIGTERM, as a service manager does."""
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=30)
    finally:
        server.process.kill()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("serve")
    SitePackages(path).add(
        "oracle-plugin-kiosk", PLUGIN, module="oracle_plugin_kiosk", entry_point="kiosk"
    )
    return path


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
def server(root: Path, fake: FakeOpenAI) -> Iterator[Server]:
    running = start_server(root, fake, "shared")
    yield running
    stop_server(running)


@pytest.fixture
def http(server: Server, fake: FakeOpenAI) -> Iterator[httpx.Client]:
    fake.respond_with(None)
    fake.requests.clear()
    with httpx.Client(
        base_url=server.url, headers={"Authorization": "Bearer tok-one"}, timeout=60
    ) as client:
        yield client
    assert fake.pending == 0, "a test left scripted replies unused"


def test_a_json_run_and_a_streamed_run_over_http(http: httpx.Client, fake: FakeOpenAI) -> None:
    fake.script(
        Reply.call("stamp", {"text": "a"}), Reply.text("Stamped."), Reply.text("Streamed answer.")
    )

    run = http.post("/threads/s1/runs", json={"message": "Stamp a"}).json()
    with http.stream(
        "POST", "/threads/s1/runs", json={"message": "Again", "stream": True}
    ) as response:
        lines = [line for line in response.iter_lines() if line.startswith("event: ")]

    assert run["status"] == "completed" and run["answer"] == "Stamped."
    assert [e["content"] for e in run["events"] if e["type"] == "tool_result"] == ["stamped a"]
    assert lines[0] == "event: run_started" and lines[-1] == "event: done"
    assert "event: text_delta" in lines
    thread = http.get("/threads/s1").json()
    assert [m["role"] for m in thread["messages"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]


def test_the_openai_client_talks_to_the_server(
    server: Server, http: httpx.Client, fake: FakeOpenAI
) -> None:
    fake.script(Reply.text("Plain."), Reply.text("Streamed, too."))
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="tok-two", max_retries=0)

    completion = client.chat.completions.create(
        model="oracle", messages=[{"role": "user", "content": "hi"}]
    )
    stream = client.chat.completions.create(
        model="oracle", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)

    assert completion.choices[0].message.content == "Plain."
    assert text == "Streamed, too."
    assert "stamp" in fake.requests[0].tool_names


def test_plugin_routes_and_auth_over_http(server: Server, http: httpx.Client) -> None:
    anonymous = httpx.get(f"{server.url}/plugins/kiosk/status")
    wrong = httpx.get(
        f"{server.url}/plugins/kiosk/status", headers={"Authorization": "Bearer nope"}
    )
    public = httpx.get(f"{server.url}/plugins/kiosk/hello")
    status = http.get("/plugins/kiosk/status")

    assert (anonymous.status_code, wrong.status_code) == (401, 401)
    assert public.text == "hello from kiosk"
    assert status.status_code == 200 and isinstance(status.json()["threads"], list)


def test_bad_bodies_get_clear_4xx_over_http(http: httpx.Client) -> None:
    not_json = http.post(
        "/threads/b/runs", content=b"{nope", headers={"Content-Type": "application/json"}
    )
    too_big = http.post("/threads/b/runs", json={"message": "x" * 1_100_000})

    assert not_json.status_code == 400 and not_json.json()["error"]["type"] == "invalid_json"
    assert too_big.status_code == 413 and too_big.json()["error"]["type"] == "body_too_large"


def test_concurrent_posts_to_one_thread_over_http(http: httpx.Client, fake: FakeOpenAI) -> None:
    arrived, release = threading.Event(), threading.Event()

    def respond(request: SeenRequest) -> Reply:
        arrived.set()
        return Reply(content="Held answer.", hold=release)

    fake.respond_with(respond)
    outcome: dict[str, httpx.Response] = {}
    first = threading.Thread(
        target=lambda: outcome.setdefault(
            "first", http.post("/threads/c/runs", json={"message": "one"})
        )
    )
    first.start()
    assert arrived.wait(30)

    second = http.post("/threads/c/runs", json={"message": "two"})
    release.set()
    first.join(30)

    assert second.status_code == 409 and second.json()["error"]["type"] == "thread_busy"
    assert outcome["first"].json()["answer"] == "Held answer."


def test_startup_and_shutdown_hooks_run_once_and_sigterm_stops_cleanly(
    root: Path, fake: FakeOpenAI
) -> None:
    running = start_server(root, fake, "lifecycle")
    health = httpx.get(f"{running.url}/health").json()

    stop_server(running)

    assert health == {"status": "ok", "version": "0.1.0", "auth": True}
    # uvicorn re-raises the signal after its graceful shutdown, as a service manager expects
    assert running.process.returncode in (0, -signal.SIGTERM)
    assert running.log.read_text().split() == ["startup", "shutdown"]


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (
            ["--host", "0.0.0.0"],
            {},
            ["refusing to serve on 0.0.0.0 without an API token", "ORACLE_API_TOKEN"],
        ),
        (
            [],
            {"ORACLE_ALLOWED_HOSTS": "oracle.example.com"},
            ["ORACLE_ALLOWED_HOSTS (--allowed-hosts) needs ORACLE_API_TOKEN"],
        ),
    ],
    ids=["public address", "allowed hosts"],
)
def test_serve_refuses_to_start_open_to_other_sites_without_a_token(
    root: Path, args: list[str], env: dict[str, str], says: list[str]
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "oracle_core", "serve", *args],
        env={**os.environ, "ORACLE_API_TOKEN": "", "ORACLE_HOME": str(root / "home3"), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 2
    for text in says:
        assert text in result.stderr


def test_events_in_the_stream_are_one_json_object_per_data_line(
    http: httpx.Client, fake: FakeOpenAI
) -> None:
    fake.script(Reply.text("Line one.\nLine two."))

    with http.stream(
        "POST", "/threads/n/runs", json={"message": "two lines", "stream": True}
    ) as response:
        data = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]

    assert data[-1]["type"] == "done" and data[-1]["answer"] == "Line one.\nLine two."


def test_sigterm_during_runs_hands_them_over_with_a_503_and_exits_within_the_grace(
    root: Path, fake: FakeOpenAI
) -> None:
    grace = 4.0
    calls: queue.Queue[str] = queue.Queue()
    release = threading.Event()

    def respond(request: SeenRequest) -> Reply:
        calls.put(request.messages[-1]["content"])
        return Reply(content="Never sent.", hold=release)  # held open until the test ends

    fake.respond_with(respond)
    running = start_server(root, fake, "sigterm", "--shutdown-grace", str(grace))
    auth = {"Authorization": "Bearer tok-one"}
    outcome: dict[str, object] = {}

    def post() -> None:
        outcome["json"] = httpx.post(
            f"{running.url}/threads/j/runs", json={"message": "json"}, headers=auth, timeout=60
        )

    def stream() -> None:
        body = {"message": "stream", "stream": True}
        with httpx.stream(
            "POST", f"{running.url}/threads/s/runs", json=body, headers=auth, timeout=60
        ) as response:
            outcome["sse"] = [
                json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")
            ]

    clients = [threading.Thread(target=post), threading.Thread(target=stream)]
    try:
        for client in clients:
            client.start()
        assert {calls.get(timeout=60), calls.get(timeout=60)} == {"json", "stream"}

        signalled = time.monotonic()
        running.process.send_signal(signal.SIGTERM)
        running.process.wait(timeout=grace)  # raises if it is still running at the deadline
        took = time.monotonic() - signalled
        for client in clients:
            client.join(30)
    finally:
        release.set()
        running.process.kill()

    response = outcome["json"]
    assert isinstance(response, httpx.Response) and response.status_code == 503
    assert response.json()["error"]["type"] == "run_handed_over"  # another process finishes it
    events = outcome["sse"]
    assert isinstance(events, list)
    assert events[0]["type"] == "run_started"
    assert events[-1]["type"] == "error" and events[-1]["error"] == "run_handed_over"
    assert took < grace
    assert running.process.returncode in (0, -signal.SIGTERM)
    assert running.log.read_text().split() == ["startup", "shutdown"]
    assert "graceful shutdown exceeded" not in "".join(running.stderr)  # not cut by uvicorn
    store = SQLiteCheckpointer(root / "sigterm" / "oracle.db")
    try:
        statuses = [run_statuses(store, thread) for thread in ("j", "s")]
    finally:
        asyncio.run(store.close())
    assert statuses == [["running"], ["running"]]  # handed over: the next process finishes them


def run_statuses(store: SQLiteCheckpointer, thread_id: str) -> list[str]:
    """The statuses of a thread's saved runs."""
    return [run.status for run in asyncio.run(store.load(thread_id)).runs]


@pytest.mark.parametrize("env", [{"ORACLE_API_TOKEN": ""}, {"ORACLE_ALLOWED_HOSTS": "oracle.test"}])
def test_a_server_refuses_hosts_it_does_not_answer_to_over_http(
    root: Path, fake: FakeOpenAI, env: dict[str, str]
) -> None:
    running = start_server(root, fake, "hosts", env=env)
    host, port = running.url.removeprefix("http://").rsplit(":", 1)
    try:
        replies = {}
        for name in ("attacker.example", "localhost.attacker.example", "oracle.test", host):
            with socket.create_connection((host, int(port)), timeout=30) as sock:
                request = (
                    f"GET /health HTTP/1.1\r\nHost: {name}:{port}\r\nConnection: close\r\n\r\n"
                )
                sock.sendall(request.encode())
                replies[name] = sock.makefile("rb").readline().split()[1].decode()
    finally:
        stop_server(running)

    if env.get("ORACLE_API_TOKEN") == "":  # no token: loopback names only
        assert replies == {"attacker.example": "421", "localhost.attacker.example": "421",
                           "oracle.test": "421", host: "200"}  # fmt: skip
    else:  # a token and a list: the list only
        assert replies == {"attacker.example": "421", "localhost.attacker.example": "421",
                           "oracle.test": "200", host: "421"}  # fmt: skip
