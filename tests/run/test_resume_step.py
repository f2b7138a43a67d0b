"""Resume as the first step of an ordinary run, over a RunState value and RunDeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from waits_support import (
    CallsThenText,
    Kit,
    build_oracle,
    counting_tool,
    error_of,
    executions,
    tool_messages,
)

from oracle_core.run.loop import Run
from oracle_core.run.state import RunState
from oracle_core.run.turn import NewTurn
from oracle_core.run.waits.resume import ResumeStep, resumed_run
from oracle_core.values.events import Event, OperationUpdated, RunFinished, ToolResultEvent


def test_a_new_runs_state_holds_the_lease_under_its_own_run_id() -> None:
    state = RunState.new("t", "hi", user_id="ana", stream=False)
    other = RunState.new("t", "hi")

    assert state.thread_id == state.record.thread_id == "t"
    assert state.owner == state.record.id != other.record.id
    assert (state.message, state.user_id, state.stream) == ("hi", "ana", False)
    assert state.running and state.messages == [] and state.waiting == []


def test_reading_a_thread_sets_its_messages_tokens_and_loads() -> None:
    state = RunState.new("t", "hi")
    state.read([{"role": "user", "content": "a"}], [3], ["kit"])

    assert (state.messages, state.tokens, state.loaded, state.message_tokens) == (
        [{"role": "user", "content": "a"}],
        [3],
        ["kit"],
        3,
    )


def test_a_run_of_a_user_message_starts_with_a_new_turn() -> None:
    run = Run(object(), RunState.new("t", "hi"))  # type: ignore[arg-type]  # deps unused here

    assert isinstance(run.first, NewTurn) and run.first.public


async def approved(oracle: Any) -> Any:
    """A waiting approval of ``delete a.txt``, approved in the store (not yet resumed)."""
    result = await oracle.run("t", "please delete a.txt")
    (operation,) = result.operations
    settled, _ = await oracle.checkpointer.update_operation(
        operation.id, expect={"pending"}, status="approved"
    )
    return settled


async def test_a_resumed_run_is_an_ordinary_run_whose_first_step_runs_the_saved_call(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        operation = await approved(oracle)
        run = resumed_run(await oracle.run_deps(), operation)
        events: list[Event] = [e async for e in run.events()]
        after = await oracle.operation(operation.id)

    assert type(run) is Run and isinstance(run.first, ResumeStep)
    assert run.state.record.id == operation.run_id  # the waiting run, carried on
    assert run.state.owner.startswith(f"{operation.run_id}:")  # a lease owner of its own
    assert run.first.claimed is not None and run.first.public
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.content == "deleted a.txt"
    assert any(isinstance(e, OperationUpdated) for e in events)
    assert isinstance(events[-1], RunFinished) and events[-1].status == "completed"
    assert executions(log) == ["a.txt"]
    assert after.outcome is not None and after.outcome["answer"] == "done: deleted a.txt"


async def test_a_second_resume_is_not_claimed_touches_nothing_and_tells_no_follower(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        operation = await approved(oracle)
        deps = await oracle.run_deps()
        [e async for e in resumed_run(deps, operation).events()]
        before = await oracle.checkpointer.load("t")
        published: list[Any] = []
        oracle.checkpointer.events.publish = lambda thread, event: published.append(event)

        late = resumed_run(deps, operation)
        events = [e async for e in late.events()]
        after = await oracle.checkpointer.load("t")

    assert isinstance(late.first, ResumeStep)
    assert late.first.not_claimed and late.first.claimed is None and not late.first.public
    assert [e.type for e in events] == ["run_started", "done"]
    assert published == []
    assert after.messages == before.messages and executions(log) == ["a.txt"]


async def test_a_denied_operations_first_step_says_a_person_declined(db: Path, log: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        result = await oracle.run("t", "please delete a.txt")
        (operation,) = result.operations
        denied, _ = await oracle.checkpointer.update_operation(
            operation.id, expect={"pending"}, status="denied", reason="no"
        )
        events = [e async for e in resumed_run(await oracle.run_deps(), denied).events()]
        state = await oracle.checkpointer.load("t")

    assert isinstance(events[-1], RunFinished) and events[-1].status == "completed"
    declined = error_of(tool_messages(state.messages)[-1])
    assert declined == "A person declined this call; it did not run. Reason: no"
    assert executions(log) == []
