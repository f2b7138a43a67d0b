"""Thread state survives restarts, stays isolated per thread, and loses nothing to races."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import MakeOracle

from oracle_core import ThreadConflictError
from oracle_core.store import Checkpointer, MemoryCheckpointer, SQLiteCheckpointer
from oracle_core.store.state import RunRecord
from oracle_core.testing.openai_server import FakeOpenAI, Reply


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Checkpointer:
    return (
        MemoryCheckpointer()
        if request.param == "memory"
        else SQLiteCheckpointer(tmp_path / "oracle.db")
    )


async def test_a_new_thread_is_empty(store: Checkpointer) -> None:
    state = await store.load("new")

    assert (state.messages, state.loaded_plugins, state.runs) == ([], [], [])


async def test_a_step_saves_messages_loads_and_the_run_together(store: Checkpointer) -> None:
    run = RunRecord(id="r1", thread_id="t")
    await store.append(
        "t", base=0, messages=[{"role": "user", "content": "hi"}], loaded=["weather"], run=run
    )
    run.status = "completed"
    await store.append("t", base=1, messages=[{"role": "assistant", "content": "yo"}], run=run)

    state = await store.load("t")

    assert [m["content"] for m in state.messages] == ["hi", "yo"]
    assert state.loaded_plugins == ["weather"]
    assert [(r.id, r.status) for r in state.runs] == [("r1", "completed")]


async def test_loaded_plugins_only_grow_in_load_order_without_duplicates(
    store: Checkpointer,
) -> None:
    await store.append("t", base=0, loaded=["b", "a"])
    merged = await store.append("t", base=0, loaded=["a", "c"])

    assert merged == ["b", "a", "c"]


async def test_threads_are_isolated(store: Checkpointer) -> None:
    await store.append("one", base=0, messages=[{"role": "user", "content": "1"}], loaded=["x"])

    assert (await store.load("two")).loaded_plugins == []
    assert await store.threads() == ["one"]


async def test_appending_on_a_stale_view_is_a_conflict_and_writes_nothing(
    store: Checkpointer,
) -> None:
    await store.append("t", base=0, messages=[{"role": "user", "content": "first"}])

    with pytest.raises(ThreadConflictError, match="has 1 messages but this writer expected 0"):
        await store.append(
            "t", base=0, messages=[{"role": "user", "content": "second"}], loaded=["x"]
        )

    state = await store.load("t")
    assert [m["content"] for m in state.messages] == ["first"]
    assert state.loaded_plugins == []


def test_sqlite_state_survives_a_process_restart(tmp_path: Path) -> None:
    path = tmp_path / "oracle.db"
    writer = (
        "import asyncio, sys\n"
        "from oracle_core.store import SQLiteCheckpointer\n"
        "store = SQLiteCheckpointer(sys.argv[1])\n"
        "asyncio.run(store.append('t', base=0, messages=[{'role': 'user', 'content': 'kept'}], loaded=['weather']))\n"
    )
    subprocess.run([sys.executable, "-c", writer, str(path)], check=True, timeout=60)

    state = asyncio.run(SQLiteCheckpointer(path).load("t"))

    assert state.messages == [{"role": "user", "content": "kept"}]
    assert state.loaded_plugins == ["weather"]


def test_concurrent_writers_on_one_thread_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "oracle.db"
    SQLiteCheckpointer(path)  # create the schema once
    writers, steps = 4, 25

    def writer(index: int) -> None:
        store = SQLiteCheckpointer(path)  # its own connection, as another process would have

        async def work() -> None:
            for step in range(steps):
                while True:
                    state = await store.load("shared")
                    try:
                        await store.append(
                            "shared",
                            base=len(state.messages),
                            messages=[{"role": "user", "content": f"{index}:{step}"}],
                            loaded=[f"plugin{index}"],
                        )
                        break
                    except ThreadConflictError:
                        continue

        asyncio.run(work())

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    state = asyncio.run(SQLiteCheckpointer(path).load("shared"))
    assert sorted(m["content"] for m in state.messages) == sorted(
        f"{i}:{s}" for i in range(writers) for s in range(steps)
    )
    assert sorted(state.loaded_plugins) == [f"plugin{i}" for i in range(writers)]


async def test_two_runs_posted_at_once_on_one_thread_are_serialized(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle()
    fake_openai.script(Reply.text("answer one"), Reply.text("answer two"))

    results = await asyncio.gather(oracle.run("t", "one"), oracle.run("t", "two"))

    assert [r.status for r in results] == ["completed", "completed"]
    state = await oracle.checkpointer.load("t")
    assert [(m["role"], m["content"]) for m in state.messages] == [
        ("user", "one"),
        ("assistant", "answer one"),
        ("user", "two"),
        ("assistant", "answer two"),
    ]
