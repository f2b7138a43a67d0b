"""Several ``oracle serve`` processes on one Postgres: the promises of one process hold across all.

Each test starts real server processes sharing a Postgres schema of the test's own (the
``pg_schema`` fixture drops it after); the model is the fake OpenAI server in this process.
"""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[postgres]'")

import contextlib
import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from stores import PgSchema
from support import follow_thread, start_serve

from oracle_core.store.postgres import PostgresCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest

pytestmark = pytest.mark.slow  # runs server processes

WAIT = 60.0


@dataclass
class Server:
    """A running ``oracle serve``."""

    process: subprocess.Popen[str]
    url: str
    output: list[str]


Spawn = Callable[..., Server]


@pytest.fixture
def spawn(tmp_path: Path, pg_schema: PgSchema, fake_openai: FakeOpenAI) -> Iterator[Spawn]:
    """Start ``oracle serve`` processes on the test's schema; all are stopped at the end."""
    started: list[Server] = []

    def start(name: str, **env: str) -> Server:
        environment = {
            **os.environ,
            "ORACLE_HOME": str(tmp_path / name),
            "ORACLE_DATABASE_URL": pg_schema.env_url,
            "ORACLE_LOAD_PLUGINS": "",
            "ORACLE_MODEL": "openai/fake-model",
            "ORACLE_API_BASE": fake_openai.url,
            "OPENAI_API_KEY": "sk-fake",
            "ORACLE_API_TOKEN": "",
            **env,
        }
        server = Server(*start_serve(name, environment, wait=WAIT))
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            server.process.send_signal(signal.SIGTERM)
            try:
                server.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.process.kill()


def answer(request: SeenRequest) -> Reply:
    """Answer each user message with a text naming it."""
    last = [m for m in request.messages if m["role"] == "user"][-1]
    return Reply(content=f"answer to {last['content']}")


def post(server: Server, thread: str, message: str) -> dict[str, Any]:
    response = httpx.post(
        f"{server.url}/threads/{thread}/runs", json={"message": message}, timeout=WAIT
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def load(pg_schema: PgSchema, thread: str) -> Any:
    import asyncio

    async def read() -> Any:
        store = pg_schema.store()
        try:
            return await store.load(thread)
        finally:
            await store.close()

    return asyncio.run(read())


def test_two_processes_taking_many_turns_on_one_thread_lose_nothing(
    spawn: Spawn, fake_openai: FakeOpenAI, pg_schema: PgSchema
) -> None:
    fake_openai.respond_with(answer)
    servers = [spawn("a"), spawn("b")]
    turns = 12

    def talk(index: int) -> list[str]:
        return [post(servers[index], "shared", f"{index}:{turn}")["status"]
                for turn in range(turns)]  # fmt: skip

    with ThreadPoolExecutor(2) as pool:
        statuses = list(pool.map(talk, range(2)))

    assert statuses == [["completed"] * turns] * 2  # no run failed for a conflict or a wait
    state = load(pg_schema, "shared")
    pairs = [(state.messages[i]["content"], state.messages[i + 1]["content"])
             for i in range(0, len(state.messages), 2)]  # fmt: skip
    assert sorted(pairs) == sorted(
        (f"{i}:{t}", f"answer to {i}:{t}") for i in range(2) for t in range(turns)
    )
    assert [r.status for r in state.runs] == ["completed"] * (2 * turns)
    for server in servers:  # listing and reading from any process
        assert httpx.get(f"{server.url}/threads", timeout=WAIT).json()["threads"] == ["shared"]
        body = httpx.get(f"{server.url}/threads/shared", timeout=WAIT).json()
        assert len(body["messages"]) == 4 * turns


def test_a_killed_process_s_thread_is_taken_over_by_another(
    spawn: Spawn, fake_openai: FakeOpenAI, pg_schema: PgSchema
) -> None:
    asked = threading.Event()
    release = threading.Event()

    def hang_or_answer(request: SeenRequest) -> Reply:
        if "hang" in json.dumps(request.messages[-1]):
            asked.set()
            release.wait(WAIT)  # until the test ends: the process holding it is killed
        return answer(request)

    fake_openai.respond_with(hang_or_answer)
    a, b = spawn("a", ORACLE_LEASE_TTL="2"), spawn("b", ORACLE_LEASE_TTL="2")
    try:
        threading.Thread(target=lambda: _quietly(post, a, "t", "hang"), daemon=True).start()
        assert asked.wait(WAIT), "the run on A never reached the model"
        a.process.send_signal(signal.SIGKILL)
        a.process.wait(WAIT)

        result = post(b, "t", "after")
    finally:
        release.set()

    assert result["status"] == "completed" and result["answer"] == "answer to after"
    state = load(pg_schema, "t")
    assert [m["content"] for m in state.messages] == ["hang", "after", "answer to after"]
    assert [r.status for r in state.runs] == ["interrupted", "completed"]


def test_a_follower_on_one_process_sees_the_events_of_a_run_on_another(
    spawn: Spawn, fake_openai: FakeOpenAI
) -> None:
    fake_openai.respond_with(answer)
    a, b = spawn("a"), spawn("b")
    follower, events = follow_thread(b.url, "t", wait=WAIT)

    result = post(a, "t", "hello")
    assert result["status"] == "completed", result

    follower.join(WAIT)
    assert not follower.is_alive(), "the follower never saw the run end"
    kinds = [kind for kind, _ in events]
    assert kinds[:2] == ["subscribed", "run_started"] and kinds[-1] == "done"
    assert events[1][1]["run_id"] == result["run_id"]
    assert events[-1][1]["answer"] == "answer to hello", (events[-1], result)


def _quietly(work: Callable[..., Any], *args: Any) -> None:
    with contextlib.suppress(Exception):  # the server it talks to is killed on purpose
        work(*args)


def test_the_store_under_oracle_database_url_is_postgres(pg_schema: PgSchema) -> None:
    from oracle_core import Oracle, Settings

    settings = Settings.from_env({"ORACLE_DATABASE_URL": pg_schema.env_url, "ORACLE_HOME": "/x"})
    oracle = Oracle(entry_points=False, settings=settings)

    assert isinstance(oracle.checkpointer, PostgresCheckpointer)


STAMP_PLUGIN = '''
import os
from oracle_core import hookimpl, PluginManifest, tool

@tool(approval=True)
def stamp(text: str) -> str:
    """Stamp a text (needs a person's approval)."""
    with open(os.environ["STAMP_LOG"], "a") as log:
        log.write(text + "\\n")
    return "stamped " + text

@hookimpl
def oracle_manifest():
    return PluginManifest(name="stampkit", summary="Stamps.", when_to_use=["tests"],
                          visibility="always")

@hookimpl
def oracle_tools():
    return [stamp]
'''


def test_an_approval_decided_on_another_process_runs_the_tool_once(
    spawn: Spawn, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    from support import SitePackages

    site = tmp_path / "site"
    site.mkdir()
    SitePackages(site).add("oracle-plugin-stampkit", STAMP_PLUGIN, module="stampkit_plugin",
                           entry_point="stampkit")  # fmt: skip
    log = tmp_path / "stamps.log"

    def call_then_answer(request: SeenRequest) -> Reply:
        if request.messages[-1]["role"] == "tool":
            return Reply(content="stamped it")
        return Reply.call("stamp", {"text": "paper"})

    fake_openai.respond_with(call_then_answer)
    env = {"PYTHONPATH": str(site), "ORACLE_LOAD_PLUGINS": "stampkit", "STAMP_LOG": str(log)}
    a, b = spawn("a", **env), spawn("b", **env)

    waiting = post(a, "t", "stamp the paper")
    assert waiting["status"] == "waiting_for_approval", waiting
    (operation,) = waiting["operations"]
    listed = httpx.get(f"{b.url}/operations?thread_id=t", timeout=WAIT).json()["operations"]
    assert [(o["id"], o["status"]) for o in listed] == [(operation["id"], "pending")]
    decided = [
        httpx.post(f"{server.url}/operations/{operation['id']}/decision",
                   json={"approve": True}, timeout=WAIT)
        for server in (b, a, b)
    ]  # fmt: skip

    assert [r.status_code for r in decided] == [200, 200, 200], decided[0].text
    assert log.read_text() == "paper\n"  # once, though three decisions reached two processes
