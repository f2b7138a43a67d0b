"""The store's operation methods, in every store: compare-and-set, claims, settling by time."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import pytest
from stores import Clock

from oracle_core import Operation, OperationNotFoundError
from oracle_core.store import Checkpointer
from oracle_core.values.operations import (
    BACKGROUND_LOST_ERROR,
    DEADLINE_REASON,
    canonical_json,
    digest_of,
    new_operation_id,
    operation_lease,
)


def approval(clock: Clock, *, thread: str = "t", deadline: float | None = None) -> Operation:
    arguments = canonical_json({"path": "a.txt", "note": "é😀"})
    return Operation(
        id=new_operation_id(),
        kind="approval",
        status="pending",
        thread_id=thread,
        run_id="run_1",
        user_id="ana",
        plugin="kit",
        tool="delete",
        call_id="call_1",
        arguments=arguments,
        digest=digest_of(arguments),
        reason="needs approval",
        created_at=clock.now,
        updated_at=clock.now,
        deadline=deadline,
        details={"satisfied": []},
    )


async def test_an_inserted_operation_reads_back_exactly_from_another_opening(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    operation = approval(clock, deadline=clock.now + 60)
    await connect().insert_operation(operation)

    assert await connect().get_operation(operation.id) == operation
    assert await connect().get_operation("op_missing") is None


async def test_inserting_an_id_twice_is_refused(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    operation = approval(clock)
    store = connect()
    await store.insert_operation(operation)

    with pytest.raises(ValueError, match="exists already"):
        await store.insert_operation(operation.replace(status="approved"))
    assert (await store.get_operation(operation.id)).status == "pending"  # type: ignore[union-attr]


async def test_update_is_a_compare_and_set(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    operation = approval(clock)
    store = connect()
    await store.insert_operation(operation)
    clock.now += 5

    won, changed = await store.update_operation(
        operation.id, expect={"pending"}, status="approved", reason="ok", details={"by": "ana"}
    )
    lost, again = await connect().update_operation(
        operation.id, expect={"pending"}, status="denied", reason="no"
    )

    assert changed and not again
    assert (won.status, won.reason, won.updated_at) == ("approved", "ok", clock.now)
    assert dict(won.details) == {"satisfied": [], "by": "ana"}
    assert lost == won
    with pytest.raises(OperationNotFoundError):
        await store.update_operation("op_nope", expect={"pending"}, status="denied")


async def test_concurrent_updates_from_many_openings_let_exactly_one_win_seeded(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    rng = random.Random(7)
    for _ in range(5):
        operation = approval(clock)
        await connect().insert_operation(operation)
        wanted = [rng.choice(["approved", "denied", "cancelled"]) for _ in range(8)]
        stores = [connect() for _ in wanted]
        outcomes = await asyncio.gather(
            *(
                s.update_operation(operation.id, expect={"pending"}, status=w)
                for s, w in zip(stores, wanted, strict=True)
            )
        )
        winners = [w for (_, changed), w in zip(outcomes, wanted, strict=True) if changed]
        assert len(winners) == 1
        assert {o.status for o, _ in outcomes} == {winners[0]}


async def test_a_pending_approval_past_its_deadline_reads_as_denied_from_every_method(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    late, early = approval(clock, deadline=clock.now + 10), approval(clock, deadline=None)
    for operation in (late, early):
        await connect().insert_operation(operation)
    clock.now += 10

    listed = await connect().list_operations(status="denied")
    shown = await connect().get_operation(late.id)
    _, changed = await connect().update_operation(late.id, expect={"pending"}, status="approved")

    assert [o.id for o in listed] == [late.id]
    assert shown is not None and (shown.status, shown.reason) == ("denied", DEADLINE_REASON)
    assert not changed
    assert (await connect().get_operation(early.id)).status == "pending"  # type: ignore[union-attr]


async def test_list_filters_and_orders_oldest_first(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    made = []
    for index, thread in enumerate(["a", "b", "a"]):
        clock.now += 1
        operation = approval(clock, thread=thread).replace(run_id=f"run_{index}")
        made.append(operation)
        await connect().insert_operation(operation)
    await connect().update_operation(made[2].id, expect={"pending"}, status="approved")

    store = connect()
    assert [o.id for o in await store.list_operations()] == [o.id for o in made]
    assert [o.id for o in await store.list_operations(thread_id="a")] == [made[0].id, made[2].id]
    assert [o.id for o in await store.list_operations(status="approved")] == [made[2].id]
    assert [o.id for o in await store.list_operations(run_id="run_1")] == [made[1].id]
    assert await store.list_operations(kind="background") == []
    assert len(await store.list_operations(limit=2)) == 2


async def test_only_a_settled_operation_can_be_claimed_and_by_one_live_owner(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    operation = approval(clock)
    store, other = connect(), connect()
    await store.insert_operation(operation)

    assert await store.claim_operation(operation.id, "r1") is None  # still pending
    await store.update_operation(operation.id, expect={"pending"}, status="approved")
    assert await store.acquire("t", "r1", 30)
    first = await store.claim_operation(operation.id, "r1")
    repeat = await store.claim_operation(operation.id, "r1")
    refused = await other.claim_operation(operation.id, "r2")

    assert first is not None and (first.claimed_by, first.claims) == ("r1", 1)
    assert repeat is not None and repeat.claims == 1
    assert refused is None
    assert await store.claim_operation("op_missing", "r1") is None


async def test_a_claim_whose_owner_lost_its_lease_is_taken_over_once(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    operation = approval(clock)
    store = connect()
    await store.insert_operation(operation)
    await store.update_operation(operation.id, expect={"pending"}, status="approved")
    assert await store.acquire("t", "r1", 30)
    await store.claim_operation(operation.id, "r1")
    clock.now += 31  # r1's process died: its lease lapsed

    taken = await connect().claim_operation(operation.id, "r2")

    assert taken is not None and (taken.claimed_by, taken.claims) == ("r2", 2)


async def test_finishing_needs_the_claim_and_happens_once(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    operation = approval(clock)
    store = connect()
    await store.insert_operation(operation)
    await store.update_operation(operation.id, expect={"pending"}, status="denied")
    await store.claim_operation(operation.id, "r1")

    assert not await store.finish_operation(operation.id, "r2", {"status": "x"})
    assert await connect().finish_operation(operation.id, "r1", {"status": "completed"})
    assert not await store.finish_operation(operation.id, "r1", {"status": "again"})
    done = await connect().get_operation(operation.id)
    assert done is not None and done.resumed_at == clock.now
    assert dict(done.outcome or {}) == {"status": "completed"}
    assert await store.claim_operation(operation.id, "r3") is None  # carried on already


async def test_a_running_background_operation_without_a_live_worker_reads_as_failed(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    store = connect()
    alive = approval(clock).replace(kind="background", status="running", deadline=None)
    dead = approval(clock).replace(kind="background", status="running", deadline=None)
    assert await store.acquire(operation_lease(alive.id), alive.id, 30)
    for operation in (alive, dead):
        await store.insert_operation(operation)

    seen = {o.id: o for o in await connect().list_operations(kind="background")}

    assert seen[alive.id].status == "running"
    assert (seen[dead.id].status, seen[dead.id].error) == ("failed", BACKGROUND_LOST_ERROR)


async def test_deleting_a_thread_deletes_its_operations(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    mine, theirs = approval(clock, thread="gone"), approval(clock, thread="kept")
    store = connect()
    await store.append("gone", base=0, messages=[{"role": "user", "content": "hi"}])
    for operation in (mine, theirs):
        await store.insert_operation(operation)

    await store.delete("gone")

    assert await connect().get_operation(mine.id) is None
    assert [o.id for o in await connect().list_operations()] == [theirs.id]
