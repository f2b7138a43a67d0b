"""The usage ledger: every store keeps it the same way (memory, SQLite, Postgres).

Part of the store conformance suite: the ``connect`` fixture runs each test on every store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from oracle_core.store import Checkpointer, SQLiteCheckpointer
from oracle_core.store.usage import Grouping, Spent, UsageEntry, summarize, total


def model_call(at: float, user: str, thread: str, tokens: tuple[int, int], cost: float | None,
               run: str = "r1", model: str = "m") -> UsageEntry:  # fmt: skip
    return UsageEntry(at, "model", run, thread, user, model, prompt_tokens=tokens[0],
                      completion_tokens=tokens[1], cost=cost)  # fmt: skip


def tool_call(at: float, user: str, thread: str, tool: str, plugin: str, error: bool = False,
              run: str = "r1") -> UsageEntry:  # fmt: skip
    return UsageEntry(at, "tool", run, thread, user, "m", tool, plugin, is_error=error)


async def test_the_ledger_gives_back_what_was_recorded_oldest_first(
    connect: Callable[[], Checkpointer],
) -> None:
    entries = [
        model_call(20.0, "ann", "t1", (10, 5), 0.25),
        tool_call(21.0, "ann", "t1", "forecast", "weather", error=True),
        model_call(10.0, "bob", "t\x00odd\\id", (7, 3), None, model="x/y"),
    ]
    await connect().record_usage(entries)

    found = await connect().usage()

    assert found == sorted(entries, key=lambda e: e.at)


async def test_the_ledger_narrows_to_a_user_and_a_start_time(
    connect: Callable[[], Checkpointer],
) -> None:
    store = connect()
    await store.record_usage([model_call(10.0, "ann", "t1", (1, 1), None)])
    await store.record_usage([model_call(20.0, "ann", "t1", (2, 2), None)])
    await store.record_usage([model_call(30.0, "bob", "t2", (3, 3), None)])

    assert [e.at for e in await connect().usage(user_id="ann")] == [10.0, 20.0]
    assert [e.at for e in await connect().usage(since=20.0)] == [20.0, 30.0]
    assert [e.at for e in await connect().usage(user_id="ann", since=20.0)] == [20.0]


async def test_spent_sums_the_model_calls_of_a_user_or_thread_in_a_window(
    connect: Callable[[], Checkpointer],
) -> None:
    await connect().record_usage(
        [
            model_call(5.0, "ann", "t1", (100, 100), 1.0),  # before the window
            model_call(10.0, "ann", "t1", (10, 5), 0.5),
            model_call(11.0, "ann", "t2", (20, 5), None),
            tool_call(12.0, "ann", "t1", "forecast", "weather"),
            model_call(13.0, "bob", "t1", (1, 1), 0.25),
        ]
    )
    store = connect()

    assert await store.spent(since=10.0, user_id="ann") == Spent(40, 0.5, 2, 1)
    assert await store.spent(since=10.0, thread_id="t1") == Spent(17, 0.75, 2, 0)
    assert await store.spent(since=10.0, user_id="nobody") == Spent()


async def test_usage_outlives_the_thread_it_was_spent_on(
    connect: Callable[[], Checkpointer],
) -> None:
    store = connect()
    await store.append("t1", base=0, messages=[{"role": "user", "content": "hi"}])
    await store.record_usage([model_call(10.0, "ann", "t1", (3, 4), None)])

    await store.delete("t1")

    assert (await connect().spent(since=0.0, user_id="ann")).tokens == 7


def test_a_summary_groups_tokens_cost_runs_and_tool_calls() -> None:
    entries = [
        model_call(1.0, "ann", "t1", (10, 5), 0.5, run="r1"),
        tool_call(2.0, "ann", "t1", "forecast", "weather", run="r1"),
        model_call(3.0, "ann", "t2", (20, 5), None, run="r2"),
        tool_call(4.0, "bob", "t3", "forecast", "weather", error=True, run="r3"),
    ]

    by_user = {g.key: g.to_json() for g in summarize(entries, "user")}
    by_plugin = {g.key: g.to_json() for g in summarize(entries, "plugin")}

    assert by_user["ann"] == {
        "key": "ann", "prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40,
        "cost": 0.5, "unpriced_calls": 1, "model_calls": 2, "tool_calls": 1, "tool_errors": 0,
        "runs": 2,
    }  # fmt: skip
    assert by_plugin["weather"]["tool_calls"] == 2
    assert by_plugin["weather"]["tool_errors"] == 1


def test_a_group_of_only_unpriced_calls_has_an_unknown_cost_not_zero() -> None:
    [group] = summarize([model_call(1.0, "ann", "t1", (1, 1), None)], "model")

    assert group.to_json()["cost"] is None


async def test_a_sqlite_file_made_before_the_ledger_gains_it_on_open(tmp_path: Path) -> None:
    path = tmp_path / "oracle.db"
    store = SQLiteCheckpointer(path)
    await store.append("t1", base=0, messages=[{"role": "user", "content": "hi"}])
    await store.close()
    with sqlite3.connect(path) as db:  # as an older release left it: no oracle_usage
        db.execute("DROP TABLE oracle_usage")

    reopened = SQLiteCheckpointer(path)
    await reopened.record_usage([model_call(1.0, "ann", "t1", (2, 3), None)])

    assert (await reopened.spent(since=0.0, user_id="ann")).tokens == 5
    assert len((await reopened.load("t1")).messages) == 1
    await reopened.close()


@pytest.mark.parametrize("by", ["user", "thread", "model", "plugin"])
async def test_the_stores_summary_adds_up_as_the_entries_do(
    connect: Callable[[], Checkpointer], by: Grouping
) -> None:
    await connect().record_usage(
        [
            model_call(1.0, "ann", "t1", (10, 5), 0.5, run="r1"),
            tool_call(2.0, "ann", "t1", "forecast", "weather", run="r1"),
            tool_call(2.0, "ann", "t1", "load_capability", "", error=True, run="r1"),
            model_call(3.0, "ann", "t2", (20, 5), None, run="r2", model="x/y"),
            model_call(4.0, "bob", "t\\3", (7, 3), 0.125, run="r3"),
            tool_call(5.0, "bob", "t\\3", "forecast", "weather", error=True, run="r3"),
        ]
    )
    store = connect()

    for user, since in [(None, None), ("ann", None), (None, 2.0), ("bob", 4.5)]:
        entries = await store.usage(user_id=user, since=since)
        groups, overall = await store.usage_summary(by=by, user_id=user, since=since)

        assert [g.to_json() for g in groups] == [g.to_json() for g in summarize(entries, by)]
        assert overall.to_json() == total(entries).to_json()


async def test_a_steps_usage_rows_are_saved_with_the_step_or_not_at_all(
    connect: Callable[[], Checkpointer],
) -> None:
    from oracle_core.errors import ThreadConflictError

    store = connect()
    step = [model_call(1.0, "ann", "t1", (10, 5), None), tool_call(2.0, "ann", "t1", "f", "p")]
    await store.append("t1", base=0, messages=[{"role": "user", "content": "hi"}], usage=step)

    with pytest.raises(ThreadConflictError):  # a writer that lost the race saves nothing
        await store.append(
            "t1",
            base=0,
            messages=[{"role": "user", "content": "again"}],
            usage=[model_call(3.0, "ann", "t1", (99, 99), None)],
        )

    found = await connect().usage()
    assert [(e.at, e.kind) for e in found] == [(1.0, "model"), (2.0, "tool")]
    assert len((await connect().load("t1")).messages) == 1
