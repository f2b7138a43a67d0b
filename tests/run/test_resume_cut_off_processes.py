"""Runs that outlive their process: ``oracle serve`` killed mid-run, the run finished elsewhere.

Each test starts real ``oracle serve`` processes on one store (a shared SQLite file, or a
Postgres schema of the test's own), with the model at the fake OpenAI server in this
process and a plugin whose tools write each execution to a file (so the test counts
them) and block while a file exists (so a process is killed while one runs). A process is
killed with SIGKILL at a chosen moment; another one (already running, or started after)
resumes the run, and the test reads the thread from the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from stores import PgSchema, make_schema
from support import SitePackages, follow_thread, start_serve, wait_until

from oracle_core.store import Checkpointer, SQLiteCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest
from oracle_core.values.threads import ThreadState

pytestmark = pytest.mark.slow  # runs server processes

WAIT = 60.0

KIT_PLUGIN = '''
import os, time
from oracle_core import hookimpl, PluginManifest, tool

def _ran(entry):
    with open(os.environ["KIT_LOG"], "a") as log:
        log.write(entry + "\\n")

def _blocked(name):
    gate = os.environ["KIT_GATES"] + "/" + name
    while os.path.exists(gate):  # the test removes it (or kills this process)
        time.sleep(0.01)

@tool
def send(text: str) -> str:
    """Send a text (not safe to repeat)."""
    _ran("send " + text)
    _blocked("send")
    return "sent " + text

@tool(idempotent=True)
def lookup(text: str) -> str:
    """Look a text up (safe to repeat)."""
    _ran("lookup " + text)
    _blocked("lookup")
    return "found " + text

@tool(approval=True)
def pay(amount: int) -> str:
    """Pay an amount (a person approves)."""
    _ran("pay " + str(amount))
    _blocked("pay")
    return "paid " + str(amount)

@hookimpl
def oracle_manifest():
    return PluginManifest(name="kit", summary="Sends and looks up.", when_to_use=["tests"],
                          visibility="always")

@hookimpl
def oracle_tools():
    return [send, lookup, pay]
'''


@dataclass
class Server:
    """A running ``oracle serve``."""

    process: subprocess.Popen[str]
    url: str
    output: list[str]

    def kill(self) -> None:
        """SIGKILL: nothing of the process runs after this (no shutdown, no lease given back)."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(WAIT)


@dataclass
class Cluster:
    """Servers on one store, the files their tools write, and a reader of the store."""

    start: Callable[..., Server]
    log: Path
    gates: Path
    store: Callable[[], Checkpointer]

    def ran(self) -> list[str]:
        """The tool executions so far, in order, in every process."""
        return self.log.read_text().splitlines() if self.log.exists() else []

    def load(self, thread: str) -> ThreadState:
        """The thread as saved."""

        async def read() -> ThreadState:
            store = self.store()
            try:
                return await store.load(thread)
            finally:
                await store.close()

        return asyncio.run(read())

    def finished(self, thread: str) -> ThreadState:
        """The thread once its runs all ended (polled until then)."""
        seen: list[ThreadState] = []

        def ended() -> bool:
            state = self.load(thread)
            seen[:] = [state]
            return bool(state.runs) and all(r.status != "running" for r in state.runs)

        wait_until(ended, f"the runs of thread {thread!r} ended", wait=WAIT)
        return seen[0]


@pytest.fixture(params=["sqlite", "postgres"])
def cluster(
    request: pytest.FixtureRequest, tmp_path: Path, fake_openai: FakeOpenAI
) -> Iterator[Cluster]:
    """Start ``oracle serve`` processes on one store; every one is stopped at the end."""
    site = tmp_path / "site"
    site.mkdir()
    SitePackages(site).add("oracle-plugin-kit", KIT_PLUGIN, module="kit_plugin",
                           entry_point="kit")  # fmt: skip
    gates = tmp_path / "gates"
    gates.mkdir()
    log = tmp_path / "ran.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "ORACLE_LOAD_PLUGINS": "kit",
        "ORACLE_MODEL": "openai/fake-model",
        "ORACLE_API_BASE": fake_openai.url,
        "OPENAI_API_KEY": "sk-fake",
        "ORACLE_API_TOKEN": "",
        "ORACLE_LEASE_TTL": "3",  # a dead process's thread is free after 3 s
        "KIT_LOG": str(log),
        "KIT_GATES": str(gates),
    }
    schemas = make_schema() if request.param == "postgres" else None
    store: Callable[[], Checkpointer]
    if schemas is not None:
        schema: PgSchema = next(schemas)
        env["ORACLE_DATABASE_URL"] = schema.env_url
        store = schema.store
    else:
        database = tmp_path / "shared" / "oracle.db"
        database.parent.mkdir()

        def store() -> Checkpointer:
            return SQLiteCheckpointer(database)

    started: list[Server] = []

    def start(name: str, **more: str) -> Server:
        home = tmp_path / (name if schemas is not None else "shared")
        process, url, output = start_serve(
            name, {**env, "ORACLE_HOME": str(home), **more}, wait=WAIT
        )
        server = Server(process, url, output)
        started.append(server)
        return server

    try:
        yield Cluster(start, log, gates, store)
    finally:
        for server in started:
            if server.process.poll() is None:
                server.process.send_signal(signal.SIGTERM)
                try:
                    server.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.process.kill()
        if schemas is not None:
            with contextlib.suppress(StopIteration):
                next(schemas)  # drops the schema


def post_quietly(server: Server, thread: str, message: str) -> None:
    """Post a message in the background; the server is killed while it answers."""

    def work() -> None:
        with contextlib.suppress(Exception):
            httpx.post(f"{server.url}/threads/{thread}/runs", json={"message": message},
                       timeout=WAIT)  # fmt: skip

    threading.Thread(target=work, daemon=True).start()


def answers(state: ThreadState) -> list[str]:
    """The thread's final answers: assistant messages without tool calls."""
    return [
        str(m["content"])
        for m in state.messages
        if m["role"] == "assistant" and not m.get("tool_calls") and m.get("content")
    ]


def tool_results(state: ThreadState) -> dict[str, str]:
    """Each tool message's content, by the name of the tool it answers."""
    names = {
        c["id"]: c["function"]["name"]
        for m in state.messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    }
    return {names[m["tool_call_id"]]: m["content"] for m in state.messages if m["role"] == "tool"}


class Model:
    """The fake model's answers: the first request of a kind hangs, the next answers."""

    def __init__(self, hang_when: Callable[[SeenRequest], bool]) -> None:
        self.hang_when = hang_when
        self.asked = threading.Event()  # the request to hang on arrived
        self.release = threading.Event()  # set at the end: the process was killed
        self.hung = 0
        self.seen: list[list[dict[str, Any]]] = []

    def __call__(self, request: SeenRequest) -> Reply:
        messages = [m for m in request.messages if m["role"] != "system"]
        self.seen.append(messages)
        if self.hang_when(request) and not self.hung:
            self.hung += 1
            self.asked.set()
            self.release.wait(WAIT)
        last = messages[-1]
        if last["role"] == "user" and last["content"] == "send and look up":
            return Reply.calls(("send", {"text": "a"}), ("lookup", {"text": "b"}))
        if last["role"] == "user" and last["content"] == "pay 5":
            return Reply.call("pay", {"amount": 5})
        if last["role"] == "user" and last["content"] == "send first":
            return Reply.call("send", {"text": "early"})
        return Reply(content=f"done after {len(messages)} messages")


def test_a_run_killed_in_its_tools_is_finished_by_a_running_process(
    cluster: Cluster, fake_openai: FakeOpenAI
) -> None:
    model = Model(lambda request: False)
    fake_openai.respond_with(model)
    (cluster.gates / "send").touch()
    (cluster.gates / "lookup").touch()
    a, b = cluster.start("a"), cluster.start("b")
    follower, events = follow_thread(b.url, "t", wait=WAIT)
    try:
        post_quietly(a, "t", "send and look up")
        wait_until(lambda: sorted(cluster.ran()) == ["lookup b", "send a"],
                   "both tools run on A", wait=WAIT)  # fmt: skip
        a.kill()
        (cluster.gates / "send").unlink()
        (cluster.gates / "lookup").unlink()
        state = cluster.finished("t")
    finally:
        model.release.set()

    assert answers(state) == ["done after 4 messages"], _debug(state, [a, b])
    assert sorted(cluster.ran()) == ["lookup b", "lookup b", "send a"]  # idempotent: again
    results = tool_results(state)
    assert results["lookup"] == "found b"
    assert "may or may not have taken effect" in json.loads(results["send"])["error"]
    (run,) = state.runs
    assert (run.status, run.steps, run.resumed) == ("completed", 2, 1)
    follower.join(WAIT)
    kinds = [kind for kind, _ in events]
    assert "run_resumed" in kinds and kinds[-1] == "done", kinds
    resumed = dict(events)["run_resumed"]
    assert (resumed["run_id"], resumed["from_step"], resumed["reason"]) == (run.id, 1, "cut_off")
    assert events[-1][1]["answer"] == "done after 4 messages"
    listed = httpx.get(f"{b.url}/threads/t", timeout=WAIT).json()
    assert [(r["status"], r["resumed"]) for r in listed["runs"]] == [("completed", 1)]


def test_a_run_killed_in_a_model_call_after_a_saved_tool_step_is_finished_by_the_next_process(
    cluster: Cluster, fake_openai: FakeOpenAI
) -> None:
    model = Model(lambda request: request.messages[-1]["role"] == "tool")
    fake_openai.respond_with(model)
    a = cluster.start("a")
    try:
        post_quietly(a, "t", "send first")
        assert model.asked.wait(WAIT), "the run on A never reached its second model call"
        a.kill()
        cluster.start("b")  # SQLite: the process that starts next on the file resumes it
        state = cluster.finished("t")
    finally:
        model.release.set()

    assert answers(state) == ["done after 3 messages"]
    assert cluster.ran() == ["send early"]  # its saved call is not run again
    first_step = [s for s in model.seen if s[-1]["role"] == "user"]
    assert len(first_step) == 1  # the saved model call is not made again
    (run,) = state.runs
    assert (run.status, run.steps, run.resumed) == ("completed", 2, 1)


def test_a_run_killed_in_its_first_model_call_is_answered_by_the_next_process(
    cluster: Cluster, fake_openai: FakeOpenAI
) -> None:
    model = Model(lambda request: True)
    fake_openai.respond_with(model)
    a = cluster.start("a")
    try:
        post_quietly(a, "t", "hello")
        assert model.asked.wait(WAIT), "the run on A never reached the model"
        a.kill()
        cluster.start("b")
        state = cluster.finished("t")
    finally:
        model.release.set()

    assert [m["content"] for m in state.messages] == ["hello", "done after 1 messages"]
    (run,) = state.runs
    assert (run.status, run.steps, run.resumed) == ("completed", 1, 1)


def test_a_run_a_stopping_server_hands_over_is_finished_by_another_process(
    cluster: Cluster, fake_openai: FakeOpenAI
) -> None:
    model = Model(lambda request: True)  # the first model call hangs until the end
    fake_openai.respond_with(model)
    a = cluster.start("a", ORACLE_SHUTDOWN_GRACE="2")
    b = cluster.start("b")
    try:
        post_quietly(a, "t", "send and look up")
        assert model.asked.wait(WAIT), "the run on A never reached the model"
        signalled = time.monotonic()
        a.process.send_signal(signal.SIGTERM)  # a deploy: A stops within its grace
        a.process.wait(WAIT)
        took = time.monotonic() - signalled
        state = cluster.finished("t")  # B's sweep finds the run A handed over
    finally:
        model.release.set()

    assert took < 2 + 2, "".join(a.output)  # the grace, and a little to exit
    assert a.process.returncode in (0, -signal.SIGTERM)
    assert answers(state) == ["done after 4 messages"], _debug(state, [a, b])
    assert sorted(cluster.ran()) == ["lookup b", "send a"]  # the tools ran once, on B
    (run,) = state.runs
    assert (run.status, run.resumed) == ("completed", 1)


def test_two_live_processes_racing_to_resume_one_run_resume_it_once(
    cluster: Cluster, fake_openai: FakeOpenAI
) -> None:
    model = Model(lambda request: False)
    fake_openai.respond_with(model)
    (cluster.gates / "lookup").touch()
    a, _, _ = cluster.start("a"), cluster.start("b"), cluster.start("c")
    try:
        post_quietly(a, "t", "send and look up")
        wait_until(lambda: len(cluster.ran()) == 2, "both tools ran on A", wait=WAIT)
        a.kill()
        (cluster.gates / "lookup").unlink()
        state = cluster.finished("t")
    finally:
        model.release.set()

    assert answers(state) == ["done after 4 messages"]
    assert sorted(cluster.ran()) == ["lookup b", "lookup b", "send a"]  # once more, not twice
    (run,) = state.runs
    assert (run.status, run.resumed) == ("completed", 1)
    assert len([s for s in model.seen if s[-1]["role"] == "tool"]) == 1


def test_a_run_cut_off_twice_is_finished_by_a_third_process(
    cluster: Cluster, fake_openai: FakeOpenAI
) -> None:
    model = Model(lambda request: False)
    fake_openai.respond_with(model)
    (cluster.gates / "lookup").touch()  # blocks on A, and again on B's resumption
    a = cluster.start("a")
    try:
        post_quietly(a, "t", "send and look up")
        wait_until(lambda: len(cluster.ran()) == 2, "both tools ran on A", wait=WAIT)
        a.kill()
        b = cluster.start("b")
        wait_until(lambda: len(cluster.ran()) == 3, "B ran the lookup again", wait=WAIT)
        b.kill()
        (cluster.gates / "lookup").unlink()
        cluster.start("c")
        state = cluster.finished("t")
    finally:
        model.release.set()

    assert answers(state) == ["done after 4 messages"]
    assert sorted(cluster.ran()) == ["lookup b", "lookup b", "lookup b", "send a"]
    (run,) = state.runs
    assert (run.status, run.resumed) == ("completed", 2)
    results = tool_results(state)
    assert results["lookup"] == "found b"
    assert "may or may not have taken effect" in json.loads(results["send"])["error"]


def test_a_run_killed_inside_an_approved_call_is_finished_without_running_it_twice(
    cluster: Cluster, fake_openai: FakeOpenAI
) -> None:
    model = Model(lambda request: False)
    fake_openai.respond_with(model)
    (cluster.gates / "pay").touch()
    a, b = cluster.start("a"), cluster.start("b")
    try:
        waiting = httpx.post(f"{a.url}/threads/t/runs", json={"message": "pay 5"}, timeout=WAIT)
        (operation,) = waiting.json()["operations"]
        decide = f"{a.url}/operations/{operation['id']}/decision"

        def approve() -> None:
            with contextlib.suppress(Exception):  # A is killed while it answers
                httpx.post(decide, json={"approve": True}, timeout=WAIT)

        threading.Thread(target=approve, daemon=True).start()
        wait_until(lambda: cluster.ran() == ["pay 5"], "the approved call ran on A", wait=WAIT)
        a.kill()
        (cluster.gates / "pay").unlink()
        state = cluster.finished("t")
        settled = httpx.get(f"{b.url}/operations/{operation['id']}", timeout=WAIT).json()
    finally:
        model.release.set()

    assert answers(state) == ["done after 3 messages"]
    assert cluster.ran() == ["pay 5"]  # once: it is never run a second time
    assert "interrupted" in json.loads(tool_results(state)["pay"])["error"]
    (run,) = state.runs
    assert (run.status, run.resumed) == ("completed", 1)
    assert settled["claims"] == 2 and settled["resumed_at"] is not None


def _debug(state: ThreadState, servers: list[Server]) -> str:
    return json.dumps([r.to_json() for r in state.runs]) + "".join(
        "".join(s.output) for s in servers
    )
