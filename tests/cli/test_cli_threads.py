"""Threads you can manage: ``oracle threads`` (list, show, export, delete), the store's
``thread_summaries`` and ``delete``, and one thread-id rule for the CLI and the server."""

from __future__ import annotations

import asyncio
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_support import CONVERSATION, oracle, save

from oracle_core.cli import main
from oracle_core.errors import InvalidThreadIdError
from oracle_core.store import MemoryCheckpointer
from oracle_core.store.base import Checkpointer
from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer
from oracle_core.values.ids import THREAD_ID, check_thread_id
from oracle_core.values.threads import RunRecord

STORES: dict[str, Callable[[Path], Checkpointer]] = {
    "memory": lambda path: MemoryCheckpointer(),
    "sqlite": lambda path: SQLiteCheckpointer(path / "oracle.db"),
}


@pytest.mark.parametrize("kind", STORES)
async def test_summaries_list_threads_newest_first_with_their_size(
    tmp_path: Path, kind: str
) -> None:
    store = STORES[kind](tmp_path)
    await store.append("a", base=0, messages=[{"role": "user", "content": "one"}])
    await store.append("b", base=0, messages=CONVERSATION, run=RunRecord(id="r", thread_id="b"))

    summaries = await store.thread_summaries()
    limited = await store.thread_summaries(limit=1)
    await store.close()

    assert [s.thread_id for s in summaries] == ["b", "a"]
    assert [(s.messages, s.runs) for s in summaries] == [(4, 1), (1, 0)]
    assert all(s.tokens > 0 for s in summaries)
    assert summaries[0].updated_at >= summaries[1].updated_at > 0
    assert summaries[0].created_at <= summaries[0].updated_at
    assert [s.thread_id for s in limited] == ["b"]


@pytest.mark.parametrize("kind", STORES)
async def test_delete_removes_everything_of_one_thread_only(tmp_path: Path, kind: str) -> None:
    store = STORES[kind](tmp_path)
    run = RunRecord(id="r1", thread_id="gone")
    await store.append("gone", base=0, messages=CONVERSATION, loaded=["fakecast"], run=run)
    await store.append("kept", base=0, messages=[{"role": "user", "content": "stay"}])
    assert await store.acquire("gone", "owner", ttl=30)

    deleted, again = await store.delete("gone"), await store.delete("gone")
    state = await store.load("gone")
    new_owner = await store.acquire("gone", "someone-else", ttl=30)
    kept = await store.load("kept")
    listed = await store.threads()
    summaries = await store.thread_summaries()
    await store.close()

    assert (deleted, again) == (True, False)
    assert (state.messages, state.loaded_plugins, state.runs) == ([], [], [])
    assert listed == ["kept"]
    assert [s.thread_id for s in summaries] == ["kept"]
    assert new_owner  # the lease went with the thread
    assert kept.messages == [{"role": "user", "content": "stay"}]


async def test_a_deleted_thread_can_start_over(tmp_path: Path) -> None:
    store = SQLiteCheckpointer(tmp_path / "oracle.db")
    await store.append("t", base=0, messages=CONVERSATION)
    await store.delete("t")

    await store.append("t", base=0, messages=[{"role": "user", "content": "fresh"}])
    state = await store.load("t")
    await store.close()

    assert state.messages == [{"role": "user", "content": "fresh"}]
    assert state.message_tokens and len(state.message_tokens) == 1


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An ORACLE_HOME whose SQLite store holds two threads, ``porto`` the most recent."""
    store = SQLiteCheckpointer(tmp_path / "oracle.db")
    save(store, "older", [{"role": "user", "content": "hello"}], run=False)
    save(store, "porto", CONVERSATION)
    asyncio.run(store.close())
    return tmp_path


def test_threads_lists_last_activity_and_size(home: Path) -> None:
    code, out, _ = oracle(home, "threads")

    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == ["THREAD", "LAST", "ACTIVITY", "MESSAGES", "SIZE", "RUNS"]
    assert lines[1].split()[0] == "porto" and lines[1].split()[-4:-3] == ["4"]
    assert lines[1].split()[-2] == "tokens"
    assert "just now" in lines[1]
    assert lines[2].split()[0] == "older"


def test_threads_json_is_one_object_a_thread(home: Path) -> None:
    _, out, _ = oracle(home, "threads", "--json")

    rows = json.loads(out)
    assert [r["thread_id"] for r in rows] == ["porto", "older"]
    assert set(rows[0]) == {
        "thread_id", "created_at", "updated_at", "messages", "tokens", "runs", "title"
    }  # fmt: skip
    assert rows[0]["messages"] == 4 and rows[0]["runs"] == 1
    assert rows[1]["title"] == "hello"  # its first user message


def test_no_threads_says_how_to_make_one(tmp_path: Path) -> None:
    code, out, _ = oracle(tmp_path, "threads")

    assert code == 0
    assert "No threads yet" in out


def test_show_reads_as_a_conversation(home: Path) -> None:
    code, out, _ = oracle(home, "threads", "show", "porto")

    assert code == 0
    assert out.splitlines()[0].startswith("Thread 'porto': 4 messages, 1 runs, loaded: fakecast")
    assert "user: Weather in Porto?" in out
    assert '→ get_forecast({"place": "Porto"})' in out
    assert "← rain" in out
    assert "assistant: Rain in Porto." in out


def test_export_is_the_whole_thread_as_json(home: Path) -> None:
    code, out, _ = oracle(home, "threads", "export", "porto")

    data = json.loads(out)
    assert code == 0
    assert data["thread_id"] == "porto"
    assert data["messages"] == CONVERSATION
    assert data["loaded_plugins"] == ["fakecast"]
    assert [r["id"] for r in data["runs"]] == ["run-porto"]
    assert len(data["message_tokens"]) == 4


def test_delete_forgets_the_thread(home: Path) -> None:
    code, out, _ = oracle(home, "threads", "delete", "porto", "--yes")
    _, listing, _ = oracle(home, "threads", "--json")
    missing, _, err = oracle(home, "threads", "show", "porto")

    assert code == 0 and "Deleted thread 'porto'" in out
    assert [r["thread_id"] for r in json.loads(listing)] == ["older"]
    assert missing == 1 and "no thread 'porto'" in err


def test_deleting_a_thread_that_is_not_there_fails(home: Path) -> None:
    code, _, err = oracle(home, "threads", "delete", "nowhere", "-y")

    assert code == 1
    assert "no thread 'nowhere' (oracle threads lists them)" in err


def test_a_thread_with_a_live_lease_is_not_deleted(home: Path) -> None:
    store = SQLiteCheckpointer(home / "oracle.db")
    assert asyncio.run(store.acquire("porto", "another-process:1:run", ttl=60))
    asyncio.run(store.close())

    code, _, err = oracle(home, "threads", "delete", "porto", "-y")
    _, listing, _ = oracle(home, "threads", "--json")

    assert code == 1
    assert "has a run in progress" in err
    assert "porto" in listing


def random_ids(count: int) -> list[str]:
    rng = random.Random(15)
    alphabet = string.ascii_letters + string.digits + "._:@-/ \\%?#\x00\u00e9\U0001f600"
    ids = ["", "a" * 128, "a" * 129, "-x", ".x", "x.", "a:b@c", "é"]
    ids += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(count)]
    return ids


@pytest.mark.parametrize("thread_id", random_ids(60))
def test_the_cli_accepts_exactly_the_ids_the_server_accepts(tmp_path: Path, thread_id: str) -> None:
    from oracle_core.server.limits import THREAD_ID as SERVER_RULE

    valid = THREAD_ID.fullmatch(thread_id) is not None
    code, _, err = oracle(tmp_path, "threads", "show", "--", thread_id)

    assert SERVER_RULE is THREAD_ID
    if valid:
        assert check_thread_id(thread_id) == thread_id
        assert code == 1 and "no thread" in err
    else:
        with pytest.raises(InvalidThreadIdError):
            check_thread_id(thread_id)
        assert code == 2 and "letters, digits" in err
        assert "Traceback" not in err


def test_ask_refuses_a_bad_thread_id_before_building_anything(tmp_path: Path) -> None:
    code, _, err = oracle(tmp_path, "ask", "hi", "--thread", "../etc", "--model", "demo")

    assert code == 2
    assert "thread id '../etc' is not valid" in err
    assert not (tmp_path / "oracle.db").exists()


def test_shell_completion_offers_the_stored_thread_ids(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.shell_completion import ShellComplete

    monkeypatch.setenv("ORACLE_HOME", str(home))
    complete = ShellComplete(main, {}, "oracle", "_ORACLE_COMPLETE")

    shown = [c.value for c in complete.get_completions(["threads", "show"], "p")]
    every = [c.value for c in complete.get_completions(["ask", "hi", "--thread"], "")]

    assert shown == ["porto"]
    assert every == ["porto", "older"]


@pytest.mark.parametrize(
    ("times", "said"), [(0, None), (1, "resumed once"), (3, "resumed 3 times")]
)
def test_threads_show_says_which_runs_another_process_finished(
    tmp_path: Path, times: int, said: str | None
) -> None:
    store = SQLiteCheckpointer(tmp_path / "oracle.db")

    async def write() -> None:
        record = RunRecord(
            id="run-cut", thread_id="t", status="completed", resumed=times,
            resumed_at=1_780_000_000.0 if times else None,
        )  # fmt: skip
        await store.append("t", base=0, messages=CONVERSATION, run=record)
        await store.close()

    asyncio.run(write())

    code, out, _ = oracle(tmp_path, "threads", "show", "t")

    assert code == 0
    lines = [line for line in out.splitlines() if "was resumed" in line]
    if said is None:
        assert lines == []
    else:
        assert len(lines) == 1 and said in lines[0] and "run-cut" in lines[0]
        assert "(completed)" in lines[0] and "2026-" in lines[0]
