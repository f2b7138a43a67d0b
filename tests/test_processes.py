"""Several processes on one SQLite file: shared threads, a killed run, a held write lock.

The children are real Python processes running ``tests/process_child.py``; every child a
test starts is killed (if still alive) when the test ends.
"""

from __future__ import annotations

import asyncio
import functools
import json
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from support import Spawn, spawning
from support import wait_until as support_wait_until

from oracle_core import (
    Model,
    ModelRequest,
    ModelResponse,
    Oracle,
    Settings,
    SQLiteCheckpointer,
    ThreadState,
)
from oracle_core.models.base import assistant_message
from oracle_core.server import create_app
from oracle_core.server.serving import make_server

pytestmark = pytest.mark.slow  # runs subprocesses: `pytest -m 'not slow'` skips it

CHILD = Path(__file__).with_name("process_child.py")
TURNS = 15
PAUSE = 0.01  # seconds between one writer's turns, so the two writers interleave
WAIT = 60.0  # seconds any bounded wait of this module may take before the test fails


class Answers(Model):
    """Answers every request with ``text``, in process."""

    name = "answers"

    def __init__(self, text: str) -> None:
        self.text = text

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(assistant_message(self.text, None))


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start ``process_child.py <role> <args>``; every child is killed at the end of the test."""
    with spawning(CHILD, wait=WAIT) as start:
        yield start


wait_until = functools.partial(support_wait_until, wait=WAIT)
"""Poll a condition until it holds, for at most :data:`WAIT` seconds."""


def finish(child: subprocess.Popen[str]) -> str:
    """Wait for ``child`` to exit; its output."""
    output, _ = child.communicate(timeout=WAIT)
    return output


def assert_valid_openai_sequence(messages: Sequence[Mapping[str, Any]]) -> None:
    """Every assistant tool call is answered by exactly one tool message right after it, in order."""
    index = 0
    while index < len(messages):
        message = messages[index]
        assert message["role"] in {"user", "assistant"}, f"message {index} answers no call"
        ids = [call["id"] for call in message.get("tool_calls") or []]
        answers = messages[index + 1 : index + 1 + len(ids)]
        assert [(m["role"], m.get("tool_call_id")) for m in answers] == [
            ("tool", i) for i in ids
        ], f"the calls of message {index} are not answered in order right after it"
        index += 1 + len(ids)


def load(path: Path, thread_id: str) -> ThreadState:
    """The thread as a fresh store reads it."""

    async def read() -> ThreadState:
        store = SQLiteCheckpointer(path)
        try:
            return await store.load(thread_id)
        finally:
            await store.close()

    return asyncio.run(read())


def build(path: Path, home: Path, text: str = "recovered") -> Oracle:
    return Oracle(
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(home)}),
        model=Answers(text),
        checkpointer=SQLiteCheckpointer(path),
    )


# -- two writers on one thread --------------------------------------------------------------


@dataclass
class TwoWriters:
    """What two processes that each ran :data:`TURNS` turns on one thread left behind."""

    outcomes: list[dict[str, Any]]
    executed: list[str]
    state: ThreadState


@pytest.fixture
def two_writers(tmp_path: Path, spawn: Spawn) -> TwoWriters:
    db, go = tmp_path / "shared.db", tmp_path / "go"
    children = []
    for name in ("a", "b"):
        args = (tmp_path / f"{name}.ready", go, tmp_path / f"{name}.log", tmp_path / f"{name}.json")
        children.append(spawn("writer", db, "shared", TURNS, PAUSE, *args))
    wait_until(
        lambda: (
            all((tmp_path / f"{n}.ready").exists() for n in "ab")
            or any(c.poll() is not None for c in children)
        ),
        "both writers are ready",
    )
    go.touch()  # both start at once
    outputs = [finish(child) for child in children]
    assert [c.returncode for c in children] == [0, 0], outputs
    outcomes = [o for n in "ab" for o in json.loads((tmp_path / f"{n}.json").read_text())]
    executed = [
        line for n in "ab" for line in (tmp_path / f"{n}.log").read_text().splitlines() if line
    ]
    return TwoWriters(outcomes, executed, load(db, "shared"))


def test_two_processes_writing_one_thread_complete_every_run(two_writers: TwoWriters) -> None:
    assert len(two_writers.outcomes) == 2 * TURNS
    assert {(o["status"], o["error"]) for o in two_writers.outcomes} == {("completed", None)}
    assert [r.status for r in two_writers.state.runs] == ["completed"] * (2 * TURNS)


def test_every_stream_of_two_writers_ends_with_one_final_event(two_writers: TwoWriters) -> None:
    assert all(o["ended_with_final_event"] for o in two_writers.outcomes)
    assert all(o["final_events"] == 1 for o in two_writers.outcomes)


def test_two_writers_leave_a_valid_openai_sequence(two_writers: TwoWriters) -> None:
    messages = two_writers.state.messages
    assert_valid_openai_sequence(messages)
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    assert len(calls) == len(set(calls)) == 2 * TURNS
    assert sum(m["role"] == "user" for m in messages) == 2 * TURNS


def test_two_writers_lose_no_tool_result(two_writers: TwoWriters) -> None:
    results = [m["content"] for m in two_writers.state.messages if m["role"] == "tool"]
    assert len(results) == len(two_writers.executed) == 2 * TURNS
    assert sorted(results) == sorted(f"noted {run_id}" for run_id in two_writers.executed)


# -- a killed process's run -------------------------------------------------------------------


@pytest.fixture
def crashed(tmp_path: Path, spawn: Spawn) -> Path:
    """A SQLite file whose thread ``t`` holds a run whose process died inside a tool call."""
    db, marker = tmp_path / "crash.db", tmp_path / "crashed"
    child = spawn("crasher", db, "t", marker)
    output = finish(child)
    assert child.returncode == 1 and marker.exists(), output
    return db


async def test_the_next_run_on_a_dead_runs_thread_marks_it_interrupted(
    crashed: Path, tmp_path: Path
) -> None:
    async with build(crashed, tmp_path / "home") as oracle:
        result = await oracle.run("t", "next")
        state = await oracle.checkpointer.load("t")

    assert result.status == "completed" and result.answer == "recovered"
    dead, new = state.runs
    assert dead.status == "interrupted"
    assert dead.error and "stopped before it ended" in dead.error
    assert new.status == "completed"


async def test_the_dead_runs_dangling_tool_call_gets_a_not_run_message(
    crashed: Path, tmp_path: Path
) -> None:
    async with build(crashed, tmp_path / "home") as oracle:
        await oracle.run("t", "next")
        messages = (await oracle.checkpointer.load("t")).messages

    assert_valid_openai_sequence(messages)
    (call,) = messages[1]["tool_calls"]
    assert call["function"]["name"] == "crash"
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert messages[2]["tool_call_id"] == call["id"]
    assert "not run" in json.loads(messages[2]["content"])["error"]
    assert messages[3]["content"] == "next"


def test_start_marks_a_dead_run_interrupted_once_its_lease_expired(
    crashed: Path, tmp_path: Path
) -> None:
    def lease_expired() -> bool:
        with sqlite3.connect(crashed) as db:
            rows = db.execute("SELECT expires_at FROM oracle_leases WHERE thread_id = 't'")
            return all(expires <= time.time() for (expires,) in rows)

    wait_until(lease_expired, "the dead run's lease expired")
    assert [r.status for r in load(crashed, "t").runs] == ["running"]  # nothing marked it yet

    async def start() -> None:
        async with build(crashed, tmp_path / "home"):
            pass

    asyncio.run(start())

    (run,) = load(crashed, "t").runs
    assert run.status == "interrupted"
    assert run.error and "stopped before it ended" in run.error


# -- /health while another connection holds the write lock -------------------------------------


class WatchedStore(SQLiteCheckpointer):
    """A SQLite store that says when a run first asks it for the thread's lease (a write)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.acquiring = threading.Event()

    async def acquire(self, thread_id: str, owner: str, ttl: float) -> bool:
        self.acquiring.set()
        return await super().acquire(thread_id, owner, ttl)


@dataclass
class Blocked:
    """A served oracle whose run waits for a write lock another connection holds."""

    client: httpx.Client
    run: Future[httpx.Response]
    lock: sqlite3.Connection


@pytest.fixture
def blocked(tmp_path: Path) -> Iterator[Blocked]:
    """``oracle serve``'s app and uvicorn server on 127.0.0.1 (in a thread) over a SQLite file.

    Once the server runs, a separate connection takes the file's write lock and a run is
    posted; the fixture returns when the run has asked the store for its first write.
    """
    path = tmp_path / "locked.db"
    store = WatchedStore(path)
    oracle = Oracle(
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(tmp_path / "home")}),
        model=Answers("unblocked"),
        checkpointer=store,
    )
    serving = threading.Event()
    server = make_server(create_app(oracle), log_level="warning", on_serving=serving.set)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    lock = sqlite3.connect(path, isolation_level=None)
    try:
        assert serving.wait(WAIT), "uvicorn did not start"  # started: the file has its tables
        host, port = sock.getsockname()[:2]
        with (
            httpx.Client(base_url=f"http://{host}:{port}", timeout=WAIT) as client,
            ThreadPoolExecutor(1) as poster,
        ):
            assert client.get("/health").status_code == 200  # the connection is open
            lock.execute("BEGIN IMMEDIATE")
            run = poster.submit(client.post, "/threads/t/runs", json={"message": "hi"})
            try:
                assert store.acquiring.wait(WAIT), "the run never reached the store"
                yield Blocked(client, run, lock)
            finally:
                if lock.in_transaction:
                    lock.execute("ROLLBACK")
                run.result(WAIT)
    finally:
        lock.close()
        server.should_exit = True
        thread.join(WAIT)


def test_health_answers_while_a_run_waits_for_the_write_lock(blocked: Blocked) -> None:
    began = time.perf_counter()
    response = blocked.client.get("/health")
    took = time.perf_counter() - began

    assert response.status_code == 200 and response.json()["status"] == "ok"
    assert blocked.lock.in_transaction and not blocked.run.done()  # still held, still pending
    assert took < 0.1, f"/health took {took * 1000:.0f} ms while the lock was held"


def test_a_run_waiting_for_the_write_lock_completes_once_it_is_released(
    blocked: Blocked,
) -> None:
    assert not blocked.run.done()
    blocked.lock.execute("ROLLBACK")

    response = blocked.run.result(WAIT)

    assert response.status_code == 200
    assert response.json()["status"] == "completed"
    assert response.json()["answer"] == "unblocked"
