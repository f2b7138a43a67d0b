"""Thread state survives restarts, stays isolated per thread, and loses nothing to races.

Every store runs the same suite: the ``store`` fixture is parametrized by kind.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import MakeOracle
from stores import Clock
from support import reference_text
from text_samples import random_json, random_text, reference_json

from oracle_core import ThreadConflictError
from oracle_core.store import Checkpointer, SQLiteCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.messages import Message, public_message
from oracle_core.values.threads import RunRecord
from oracle_core.values.tokens import count_json_tokens


@pytest.fixture
def store(connect: Callable[[], Checkpointer]) -> Checkpointer:
    return connect()


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


@pytest.mark.slow  # a second process
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


# Valid UTF-8 in, valid UTF-8 out


def random_message(rng: random.Random) -> Message:
    """An OpenAI-shaped message with random text everywhere, at every depth."""
    message: Message = {
        "role": rng.choice(["user", "assistant", "tool"]),
        "content": random_text(rng, 40),
        "tool_calls": [
            {
                "id": random_text(rng),
                "type": "function",
                "function": {"name": random_text(rng), "arguments": random_text(rng, 40)},
            }
            for _ in range(rng.randint(0, 2))
        ],
        "extra": random_json(rng, rng.randint(0, 6)),
    }
    message[random_text(rng, 5)] = random_json(rng, 3)
    return message


async def test_every_string_saved_loads_as_valid_utf8(store: Checkpointer) -> None:
    rng = random.Random(13)
    expected: dict[str, tuple[list[Message], list[str], list[str]]] = {}
    for index in range(40):
        thread_id = f"t{index}-{random_text(rng)}"
        messages = [random_message(rng) for _ in range(rng.randint(1, 4))]
        plugins = [random_text(rng, 6) for _ in range(rng.randint(0, 3))]
        error = random_text(rng, 20)
        run = RunRecord(id=f"r{index}-{random_text(rng)}", thread_id=thread_id, error=error)
        await store.append(thread_id, base=0, messages=messages[:1], loaded=plugins, run=run)
        await store.append(thread_id, base=1, messages=messages[1:])
        expected[thread_id] = (messages, plugins, [run.id, error])

    for thread_id, (messages, plugins, (run_id, error)) in expected.items():
        state = await store.load(thread_id)

        assert state.thread_id == reference_text(thread_id)
        assert state.messages == reference_json(messages)
        assert state.loaded_plugins == list(dict.fromkeys(map(reference_text, plugins)))
        assert [(r.id, r.thread_id, r.error) for r in state.runs] == [
            (reference_text(run_id), reference_text(thread_id), reference_text(error))
        ]
        for message in state.messages:
            json.dumps(message, ensure_ascii=False).encode("utf-8")
        json.dumps([r.to_json() for r in state.runs], ensure_ascii=False).encode("utf-8")
    assert sorted(await store.threads()) == sorted(map(reference_text, expected))


async def test_a_thread_id_names_the_same_thread_before_and_after_cleaning(
    store: Checkpointer,
) -> None:
    await store.append("chat\ud83d", base=0, messages=[{"role": "user", "content": "hi"}])

    assert (await store.load("chat\ufffd")).messages == [{"role": "user", "content": "hi"}]
    assert await store.threads() == ["chat\ufffd"]


# Token counts, computed once per message


async def test_each_message_is_saved_with_its_token_count_of_what_the_model_sees(
    store: Checkpointer,
) -> None:
    messages: list[Message] = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "Let me check.", "_tools": ["x" * 1000]},
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 21 °C. " * 50},
    ]
    await store.append("t", base=0, messages=messages[:2])
    await store.append("t", base=2, messages=messages[2:])

    state = await store.load("t")

    assert state.message_tokens == [count_json_tokens(public_message(m)) for m in messages]
    assert len(state.message_tokens) == len(state.messages)


async def test_the_event_loop_runs_while_a_large_message_is_counted(store: Checkpointer) -> None:
    big: Message = {"role": "tool", "tool_call_id": "c", "content": "word, " * 400_000}
    ticked = asyncio.Event()

    async def ticker() -> None:
        for _ in range(200):
            await asyncio.sleep(0)
        ticked.set()

    appending = asyncio.create_task(store.append("t", base=0, messages=[big]))
    ticking = asyncio.create_task(ticker())
    await asyncio.wait_for(ticked.wait(), timeout=30)

    assert not appending.done()
    await asyncio.wait_for(appending, timeout=60)
    await ticking
    assert (await store.load("t")).message_tokens == [count_json_tokens(big)]


# Off the event loop


async def test_the_event_loop_keeps_running_while_another_process_holds_the_write_lock(
    tmp_path: Path,
) -> None:
    path = tmp_path / "oracle.db"
    store = SQLiteCheckpointer(path, busy_timeout=20)
    await store.append("t", base=0, messages=[{"role": "user", "content": "before"}])
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")  # as another process would, mid-write
    ticked = asyncio.Event()

    async def ticker() -> None:
        for _ in range(1000):
            await asyncio.sleep(0)
        ticked.set()

    try:
        appending = asyncio.create_task(
            store.append("t", base=1, messages=[{"role": "user", "content": "after"}])
        )
        ticking = asyncio.create_task(ticker())
        await asyncio.wait_for(ticked.wait(), timeout=10)

        assert not appending.done()  # it waits for the lock, and the loop goes on meanwhile
    finally:
        other.execute("COMMIT")
        other.close()
    await asyncio.wait_for(appending, timeout=20)
    await ticking
    assert [m["content"] for m in (await store.load("t")).messages] == ["before", "after"]
    await store.close()


async def test_closing_twice_is_safe_and_a_closed_store_says_so(tmp_path: Path) -> None:
    store = SQLiteCheckpointer(tmp_path / "oracle.db")
    await store.append("t", base=0)

    await store.close()
    await store.close()

    with pytest.raises(RuntimeError, match="is closed"):
        await store.load("t")


# Leases


async def test_a_lease_is_free_to_take_and_then_refused_to_another_owner(
    store: Checkpointer,
) -> None:
    assert await store.acquire("t", "one", ttl=30) is True
    assert await store.acquire("t", "two", ttl=30) is False
    assert await store.acquire("t", "one", ttl=30) is True  # a renewal
    assert await store.acquire("other thread", "two", ttl=30) is True


async def test_an_expired_lease_is_taken_over_by_the_next_acquirer(
    store: Checkpointer, clock: Clock
) -> None:
    await store.acquire("t", "one", ttl=10)

    clock.now += 9.9
    assert await store.acquire("t", "two", ttl=10) is False
    clock.now += 0.1
    assert await store.acquire("t", "two", ttl=10) is True
    assert await store.acquire("t", "one", ttl=10) is False


async def test_a_released_lease_is_free_and_only_its_owner_can_release_it(
    store: Checkpointer,
) -> None:
    await store.acquire("t", "one", ttl=30)

    await store.release("t", "two")
    assert await store.acquire("t", "two", ttl=30) is False
    await store.release("t", "one")
    assert await store.acquire("t", "two", ttl=30) is True


async def test_an_append_renews_its_owners_lease_by_the_ttl_it_was_taken_with(
    store: Checkpointer, clock: Clock
) -> None:
    await store.acquire("t", "one", ttl=10)
    clock.now += 8

    await store.append("t", base=0, messages=[{"role": "user", "content": "hi"}], lease="one")

    clock.now += 9  # 17 s after taking it, 9 s after the renewal
    assert await store.acquire("t", "two", ttl=10) is False
    clock.now += 1
    assert await store.acquire("t", "two", ttl=10) is True


async def test_an_append_by_a_writer_without_the_lease_renews_nothing_and_is_saved(
    store: Checkpointer, clock: Clock
) -> None:
    await store.acquire("t", "one", ttl=10)
    clock.now += 8

    await store.append("t", base=0, messages=[{"role": "user", "content": "hi"}], lease="two")

    clock.now += 2
    assert await store.acquire("t", "three", ttl=10) is True
    assert [m["content"] for m in (await store.load("t")).messages] == ["hi"]


async def test_a_lease_needs_a_positive_ttl(store: Checkpointer) -> None:
    with pytest.raises(ValueError, match="positive number of seconds"):
        await store.acquire("t", "one", ttl=0)


async def test_owners_racing_for_one_lease_from_many_connections_get_it_once(
    connect: Callable[[], Checkpointer],
) -> None:
    stores = [connect() for _ in range(8)]
    await stores[0].threads()  # the file exists before the race

    won = await asyncio.gather(*(s.acquire("t", f"owner{i}", 30) for i, s in enumerate(stores)))

    assert won.count(True) == 1


# Runs left running


async def test_a_running_run_without_a_lease_is_marked_interrupted(store: Checkpointer) -> None:
    await store.append("t", base=0, run=RunRecord(id="r1", thread_id="t"))

    assert await store.mark_interrupted("t") == ["r1"]

    (run,) = (await store.load("t")).runs
    assert run.status == "interrupted"
    assert run.error is not None and "lease" in run.error


async def test_a_running_run_whose_lease_expired_is_marked_interrupted(
    store: Checkpointer, clock: Clock
) -> None:
    await store.acquire("t", "dead process", ttl=5)
    await store.append("t", base=0, run=RunRecord(id="r1", thread_id="t"), lease="dead process")
    clock.now += 5

    assert await store.mark_interrupted() == ["r1"]
    assert [r.status for r in (await store.load("t")).runs] == ["interrupted"]


async def test_a_running_run_on_a_thread_with_a_live_lease_is_left_running(
    store: Checkpointer, clock: Clock
) -> None:
    await store.append("t", base=0, run=RunRecord(id="r1", thread_id="t"))
    await store.acquire("t", "another process", ttl=5)
    clock.now += 4

    assert await store.mark_interrupted() == []
    assert [r.status for r in (await store.load("t")).runs] == ["running"]


async def test_only_running_runs_of_the_thread_asked_for_are_marked(store: Checkpointer) -> None:
    await store.append("a", base=0, run=RunRecord(id="a1", thread_id="a", created_at=1.0))
    await store.append("a", base=0, run=RunRecord(id="a0", thread_id="a", created_at=0.0))
    done = RunRecord(id="a2", thread_id="a", status="completed")
    await store.append("a", base=0, run=done)
    await store.append("b", base=0, run=RunRecord(id="b1", thread_id="b"))

    assert await store.mark_interrupted("a") == ["a0", "a1"]
    assert await store.mark_interrupted("a") == []
    assert await store.mark_interrupted() == ["b1"]
    assert [r.status for r in (await store.load("a")).runs] == [
        "interrupted",
        "interrupted",
        "completed",
    ]


# Files saved by an older release

OLD_SCHEMA = """
CREATE TABLE oracle_threads (thread_id TEXT PRIMARY KEY, created_at REAL NOT NULL,
    updated_at REAL NOT NULL);
CREATE TABLE oracle_messages (thread_id TEXT NOT NULL, seq INTEGER NOT NULL,
    message TEXT NOT NULL, PRIMARY KEY (thread_id, seq));
CREATE TABLE oracle_loaded_plugins (thread_id TEXT NOT NULL, plugin TEXT NOT NULL,
    seq INTEGER NOT NULL, PRIMARY KEY (thread_id, plugin));
CREATE TABLE oracle_runs (run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL,
    created_at REAL NOT NULL, record TEXT NOT NULL);
"""

OLD_MESSAGES: list[Message] = [
    {"role": "user", "content": "tell me a joke \ud83d\ude00"},
    {
        "role": "assistant",
        "content": "half an emoji: \ud83d",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "f", "arguments": '{"x": "\ude00"}'},
            }
        ],
    },
]


def write_old_file(path: Path) -> None:
    """A database as the previous release wrote it (json.dumps with its default ensure_ascii)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.executescript(OLD_SCHEMA)
    db.execute("INSERT INTO oracle_threads VALUES ('t', 1, 1)")
    for seq, message in enumerate(OLD_MESSAGES):
        db.execute("INSERT INTO oracle_messages VALUES ('t', ?, ?)", (seq, json.dumps(message)))
    db.execute("INSERT INTO oracle_loaded_plugins VALUES ('t', 'weather', 0)")
    run = RunRecord(id="r1", thread_id="t", error="\ud83d", created_at=1.0)
    db.execute("INSERT INTO oracle_runs VALUES ('r1', 't', 1.0, ?)", (json.dumps(run.to_json()),))
    db.close()


async def test_a_thread_saved_with_lone_surrogates_by_an_older_release_still_loads(
    tmp_path: Path,
) -> None:
    path = tmp_path / "oracle.db"
    write_old_file(path)
    store = SQLiteCheckpointer(path)

    state = await store.load("t")

    assert state.messages == reference_json(OLD_MESSAGES)
    assert state.messages[0]["content"] == "tell me a joke 😀"
    assert state.message_tokens == [count_json_tokens(m) for m in state.messages]
    assert state.loaded_plugins == ["weather"]
    assert [(r.id, r.status, r.error) for r in state.runs] == [("r1", "running", "\ufffd")]
    await store.append("t", base=2, messages=[{"role": "user", "content": "more"}])
    assert len((await store.load("t")).messages) == 3
    await store.close()


async def test_rows_of_an_older_release_are_written_back_cleaned_and_counted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "oracle.db"
    write_old_file(path)
    store = SQLiteCheckpointer(path)

    state = await store.load("t")

    raw = (
        sqlite3.connect(path)
        .execute("SELECT message, tokens FROM oracle_messages ORDER BY seq")
        .fetchall()
    )
    assert [json.loads(text) for text, _ in raw] == state.messages
    assert [tokens for _, tokens in raw] == state.message_tokens
    await store.close()


async def test_runs_an_older_release_left_running_are_marked_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "oracle.db"
    write_old_file(path)
    store = SQLiteCheckpointer(path)

    assert await store.mark_interrupted() == ["r1"]
    assert [r.status for r in (await store.load("t")).runs] == ["interrupted"]
    await store.close()


def test_several_processes_opening_an_older_file_at_once_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "oracle.db"
    write_old_file(path)
    loaded: list[int] = []
    start = threading.Barrier(6)

    def opener() -> None:
        store = SQLiteCheckpointer(path)  # its own connection, as another process would have

        async def work() -> None:
            start.wait()
            loaded.append(len((await store.load("t")).messages))
            await store.close()

        asyncio.run(work())

    threads = [threading.Thread(target=opener) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert loaded == [2] * 6


async def test_load_tail_reads_from_an_index_on_with_the_message_before_it(
    store: Checkpointer,
) -> None:
    messages = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    await store.append("t", base=0, messages=messages, loaded=["weather"])
    done = RunRecord(id="r1", thread_id="t", status="completed")
    going = RunRecord(id="r2", thread_id="t")
    await store.append("t", base=5, run=done)
    await store.append("t", base=5, run=going)

    tail = await store.load_tail("t", 3)

    assert [m["content"] for m in tail.messages] == ["m3", "m4"]
    assert tail.before == {"role": "user", "content": "m2"}
    assert (tail.count, tail.since, tail.loaded_plugins) == (5, 3, ["weather"])
    assert len(tail.message_tokens) == 2
    assert [r.id for r in tail.running] == ["r2"]


@pytest.mark.parametrize("since", [0, 5, 9])
async def test_load_tail_at_the_start_at_the_end_and_past_it(
    store: Checkpointer, since: int
) -> None:
    await store.append(
        "t", base=0, messages=[{"role": "user", "content": str(i)} for i in range(5)]
    )

    tail = await store.load_tail("t", since)

    assert tail.count == 5
    assert len(tail.messages) == (5 if since == 0 else 0)
    assert tail.before == ({"role": "user", "content": "4"} if since == 5 else None)


async def test_a_waiting_owner_gets_the_lease_before_one_that_asks_later(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    here, there = connect(), connect()
    assert await here.acquire("t", "here-run-1", 30)
    assert not await there.acquire("t", "there-run-1", 30)  # queued
    clock.now += 0.1
    await here.release("t", "here-run-1")

    assert not await here.acquire("t", "here-run-2", 30)  # the next run of the same process
    assert await there.acquire("t", "there-run-1", 30)
    await there.release("t", "there-run-1")
    assert await here.acquire("t", "here-run-2", 30)


async def test_a_waiter_that_gave_up_loses_its_place(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    from oracle_core.store.leases import WAITER_LIVENESS

    here, there = connect(), connect()
    assert await here.acquire("t", "a", 30)
    assert not await there.acquire("t", "gave-up", 30)
    await here.release("t", "a")
    clock.now += WAITER_LIVENESS + 0.1

    assert await here.acquire("t", "b", 30)
