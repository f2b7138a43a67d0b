"""The store's query for cut-off runs, on every store (memory, SQLite, Postgres).

A run is cut off when it is still ``running`` and no live lease holds its thread: its
process ended mid-run. ``cut_off_runs`` finds them without changing them, so that a
process can resume them (docs/scale-out.md).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from stores import Clock

from oracle_core.store import Checkpointer
from oracle_core.values.threads import RunRecord


@pytest.fixture
def store(connect: Callable[[], Checkpointer]) -> Checkpointer:
    return connect()


async def test_a_running_run_whose_lease_expired_is_found_and_left_as_it_is(
    store: Checkpointer, clock: Clock
) -> None:
    await store.acquire("t", "dead process", ttl=5)
    run = RunRecord(id="r1", thread_id="t", steps=2, user_id="ann")
    await store.append("t", base=0, run=run, lease="dead process")
    assert await store.cut_off_runs() == []  # its lease is live
    clock.now += 5

    (found,) = await store.cut_off_runs()

    assert (found.id, found.thread_id, found.status, found.steps) == ("r1", "t", "running", 2)
    assert found.user_id == "ann"
    assert [r.status for r in (await store.load("t")).runs] == ["running"]  # not changed


async def test_only_running_runs_without_a_live_lease_are_found_oldest_first(
    store: Checkpointer, clock: Clock
) -> None:
    await store.append("a", base=0, run=RunRecord(id="a1", thread_id="a", created_at=2.0))
    await store.append("b", base=0, run=RunRecord(id="b1", thread_id="b", created_at=1.0))
    await store.append("c", base=0, run=RunRecord(id="c1", thread_id="c", status="completed"))
    await store.append("d", base=0, run=RunRecord(id="d1", thread_id="d"))
    await store.acquire("d", "a live process", ttl=30)

    assert [r.id for r in await store.cut_off_runs()] == ["b1", "a1"]


async def test_a_resumed_run_s_record_keeps_its_count_and_time(store: Checkpointer) -> None:
    run = RunRecord(id="r1", thread_id="t", resumed=2, resumed_at=123.5)
    await store.append("t", base=0, run=run)

    (saved,) = (await store.load("t")).runs

    assert (saved.resumed, saved.resumed_at) == (2, 123.5)
    assert saved.to_json()["resumed"] == 2
