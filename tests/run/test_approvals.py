"""Approvals on the real SQLite store: a call waits for a person, runs once, or is declined."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from waits_support import (
    CallsThenText,
    Kit,
    build_oracle,
    counting_tool,
    error_of,
    executions,
    tool_messages,
)

from oracle_core import (
    ApprovalConfigError,
    ApprovalRequested,
    ConfigError,
    DecisionConflictError,
    OperationError,
    OperationNotFoundError,
    RunFinished,
    tool,
)
from oracle_core.run.waits.resume import INTERRUPTED_CALL
from oracle_core.values.operations import DEADLINE_REASON


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


async def waiting(oracle: Any, thread: str = "t") -> Any:
    """Run one turn that must stop to wait; its result."""
    result = await oracle.run(thread, "please delete a.txt")
    assert result.status == "waiting_for_approval", result.error
    return result


# -- asking -----------------------------------------------------------------------------------


async def test_a_call_that_needs_approval_stops_the_run_with_the_exact_call_saved(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        events = [e async for e in oracle.stream("t", "delete a.txt", user_id="ana")]
        operations = await oracle.operations(thread_id="t")

    done = events[-1]
    assert isinstance(done, RunFinished) and done.status == "waiting_for_approval"
    requested = [e for e in events if isinstance(e, ApprovalRequested)]
    assert [e.operation["id"] for e in requested] == [o.id for o in operations]
    (operation,) = operations
    assert (operation.kind, operation.status, operation.plugin, operation.tool) == (
        "approval",
        "pending",
        "kit",
        "delete",
    )
    assert operation.arguments == '{"path":"a.txt"}'
    assert operation.digest == hashlib.sha256(b'{"path":"a.txt"}').hexdigest()
    assert operation.user_id == "ana" and operation.thread_id == "t"
    assert operation.deadline is not None and operation.deadline > time.time() + 3600
    assert done.operations == [operation.to_json()]
    assert executions(log) == []


async def test_other_calls_of_the_same_response_run_as_usual(db: Path, log: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"}), ("ping", {})])
    async with build_oracle(db, Kit(counting_tool(log), ping), model=model) as oracle:
        result = await waiting(oracle)
        state = await oracle.checkpointer.load("t")

    assert [m["content"] for m in tool_messages(state.messages)] == ["pong"]
    assert [r.status for r in state.runs] == ["waiting_for_approval"]
    assert [o.tool for o in result.operations] == ["delete"]


async def test_a_run_with_two_waiting_calls_resumes_once_both_are_decided(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"}), ("delete", {"path": "b.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        first, second = (await waiting(oracle)).operations
        partly = await oracle.decide(first.id, approve=True)
        calls_before = len(model.requests)
        whole = await oracle.decide(second.id, approve=False, reason="keep b")

    assert partly.status == "waiting_for_approval"
    assert [o.id for o in partly.operations] == [second.id]
    assert calls_before == 1  # no model call while a call of the response still waits
    assert whole.status == "completed"
    assert whole.answer.startswith("done: deleted a.txt | ")
    assert executions(log) == ["a.txt"]


# -- deciding ---------------------------------------------------------------------------------


async def test_approving_runs_the_saved_call_once_and_the_model_loop_goes_on(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
        result = await oracle.decide(operation.id, approve=True, reason="fine")
        settled = await oracle.operation(operation.id)
        state = await oracle.checkpointer.load("t")

    assert (result.status, result.answer) == ("completed", "done: deleted a.txt")
    assert result.run_id == operation.run_id  # the waiting run itself goes on
    assert executions(log) == ["a.txt"]
    assert (settled.status, settled.reason) == ("approved", "fine")
    assert settled.resumed_at is not None and settled.outcome is not None
    assert [r.status for r in state.runs] == ["completed"]


async def test_denying_tells_the_model_a_person_declined_with_the_reason(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
        result = await oracle.decide(operation.id, approve=False, reason="not that file")

    assert result.status == "completed"
    assert executions(log) == []
    (answer,) = tool_messages(list(model.requests[-1].messages))
    assert answer["tool_call_id"] == operation.call_id
    assert error_of(answer) == "A person declined this call; it did not run. Reason: not that file"


async def test_the_same_decision_twice_answers_with_the_first_outcome(db: Path, log: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
        first = await oracle.decide(operation.id, approve=True)
        again = await oracle.decide(operation.id, approve=True, reason="once more")
        calls = len(model.requests)

    assert (again.run_id, again.status, again.answer) == (first.run_id, first.status, first.answer)
    assert executions(log) == ["a.txt"]
    assert calls == 2  # the repeat made no model call


async def test_a_different_decision_is_refused(db: Path, log: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
        await oracle.decide(operation.id, approve=False)
        with pytest.raises(DecisionConflictError, match="already settled as denied") as caught:
            await oracle.decide(operation.id, approve=True)

    assert caught.value.status == "denied"
    assert executions(log) == []


async def test_a_pending_approval_past_its_deadline_counts_as_denied_whoever_looks_first(
    db: Path, log: Path
) -> None:
    now = {"offset": 0.0}
    model = CallsThenText([("delete", {"path": "a.txt"})])
    oracle = build_oracle(
        db,
        Kit(counting_tool(log)),
        model=model,
        clock=lambda: time.time() + now["offset"],
        toml="[approvals]\ndeadline = 60\n",
    )
    async with oracle:
        (operation,) = (await waiting(oracle)).operations
        assert operation.deadline == pytest.approx(time.time() + 60, abs=5)
        now["offset"] = 61.0
        listed = await oracle.operations(status="denied")
        with pytest.raises(DecisionConflictError):
            await oracle.decide(operation.id, approve=True)
        resumed = await oracle.decide(operation.id, approve=False)

    assert [(o.id, o.reason) for o in listed] == [(operation.id, DEADLINE_REASON)]
    assert resumed.status == "completed"
    assert executions(log) == []


async def test_decisions_racing_in_one_process_settle_once_seeded(db: Path, log: Path) -> None:
    rng = random.Random(14)
    for round_ in range(6):
        thread = f"race-{round_}"
        model = CallsThenText([("delete", {"path": thread})])
        async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
            (operation,) = (await waiting(oracle, thread)).operations
            choices = [rng.random() < 0.5 for _ in range(rng.randint(2, 6))]
            outcomes = await asyncio.gather(
                *(oracle.decide(operation.id, approve=c) for c in choices),
                return_exceptions=True,
            )
            settled = await oracle.operation(operation.id)
        winner = settled.status == "approved"
        for choice, outcome in zip(choices, outcomes, strict=True):
            if choice == winner:
                assert not isinstance(outcome, BaseException), outcome
                assert outcome.status == "completed"
            else:
                assert isinstance(outcome, DecisionConflictError)
        assert executions(log).count(thread) == (1 if winner else 0)


# -- what can never run -----------------------------------------------------------------------


async def test_tampered_thread_arguments_do_not_change_the_call_that_runs(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
        with sqlite3.connect(db) as raw:  # someone edits the saved model message
            rows = raw.execute("SELECT seq, message FROM oracle_messages").fetchall()
            for seq, text in rows:
                if "a.txt" in text:
                    raw.execute(
                        "UPDATE oracle_messages SET message = ? WHERE seq = ?",
                        (text.replace("a.txt", "everything"), seq),
                    )
        result = await oracle.decide(operation.id, approve=True)

    assert result.status == "completed"
    assert executions(log) == ["a.txt"]


async def test_a_tampered_saved_call_fails_its_digest_check_and_nothing_runs(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
        with sqlite3.connect(db) as raw:
            (text,) = raw.execute("SELECT record FROM oracle_operations").fetchone()
            record = json.loads(text)
            record["arguments"] = '{"path":"everything"}'
            raw.execute("UPDATE oracle_operations SET record = ?", (json.dumps(record),))
        result = await oracle.decide(operation.id, approve=True)

    assert executions(log) == []
    assert result.status == "completed"
    assert "nothing ran" in result.answer


async def test_a_call_the_gate_refused_never_requests_approval(db: Path, log: Path) -> None:
    hidden = Kit(counting_tool(log), name="vault", visibility="on-demand")
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, hidden, model=model) as oracle:
        result = await oracle.run("t", "delete a.txt")
        operations = await oracle.operations()

    assert result.status == "completed"
    assert operations == []
    assert executions(log) == []
    assert "load_capability" in result.answer  # the gate's refusal reached the model


@pytest.mark.parametrize(
    "arguments", [{}, {"path": 3}, {"path": "a", "extra": 1}, "not json", "[1, 2]"]
)
async def test_a_call_with_invalid_arguments_never_requests_approval(
    db: Path, log: Path, arguments: Any
) -> None:
    model = CallsThenText([("delete", arguments)])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        result = await oracle.run("t", "delete")
        operations = await oracle.operations()

    assert (result.status, operations, executions(log)) == ("completed", [], [])


async def test_the_tool_gone_after_a_restart_fails_clearly_and_nothing_runs(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
    async with build_oracle(db, Kit(ping, name="other"), model=model) as restarted:
        with pytest.raises(OperationError, match=r"plugin 'kit'.*does not have") as caught:
            await restarted.decide(operation.id, approve=True)
        still = await restarted.operation(operation.id)

    assert not isinstance(caught.value, DecisionConflictError | OperationNotFoundError)
    assert still.status == "pending"  # nothing was recorded either
    assert executions(log) == []


async def test_unknown_operation_ids_are_not_found_alike_seeded(db: Path, log: Path) -> None:
    rng = random.Random(1414)
    alphabet = "op_0123456789abcdef'\"\\/\n\x00é😀"
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
        ids = ["", operation.id[:-1], operation.id + "0", operation.id.upper(), "x" * 5000]
        ids += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(40)]
        for bad in ids:
            with pytest.raises(OperationNotFoundError):
                await oracle.decide(bad, approve=True)
            with pytest.raises(OperationNotFoundError):
                await oracle.operation(bad)
        still = await oracle.operation(operation.id)

    assert still.status == "pending"


# -- the thread while it waits ----------------------------------------------------------------


async def test_a_new_message_on_a_waiting_thread_is_refused_naming_the_operation(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
        refused = await oracle.run("t", "and now something else")
        state = await oracle.checkpointer.load("t")

    assert refused.status == "failed"
    assert operation.id in (refused.error or "")
    assert f"oracle operations approve {operation.id}" in (refused.error or "")
    assert [m["role"] for m in state.messages] == ["user", "assistant"]  # nothing was added


async def test_cancelling_a_pending_approval_answers_the_call_and_frees_the_thread(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})], [("ping", {})])
    async with build_oracle(db, Kit(counting_tool(log), ping), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
        cancelled = await oracle.cancel_operation(operation.id)
        with pytest.raises(DecisionConflictError):
            await oracle.decide(operation.id, approve=True)
        after = await oracle.run("t", "ping please")
        state = await oracle.checkpointer.load("t")

    assert cancelled.status == "cancelled" and cancelled.resumed_at is not None
    assert [r.status for r in state.runs] == ["cancelled", "completed"]
    assert after.answer == "done: pong"
    assert "cancelled" in error_of(tool_messages(state.messages)[0])
    assert executions(log) == []


async def test_a_claim_left_by_a_dead_resumer_is_taken_over_without_running_the_call_again(
    db: Path, log: Path
) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
        store = oracle.checkpointer
        await store.update_operation(operation.id, expect={"pending"}, status="approved")
        ghost = await store.claim_operation(operation.id, "ghost")  # it holds no lease: dead
        result = await oracle.resume_operation(operation.id)

    assert ghost is not None and ghost.claims == 1
    assert result.status == "completed"
    assert INTERRUPTED_CALL in result.answer
    assert executions(log) == []


# -- who needs approval -----------------------------------------------------------------------


async def test_a_predicate_decides_per_call_and_one_that_raises_asks_a_person(
    db: Path, log: Path
) -> None:
    def big(arguments: dict[str, Any], context: Any) -> bool:
        if arguments["path"] == "boom":
            raise RuntimeError("cannot tell")
        return bool(arguments["path"].startswith("/"))

    model = CallsThenText(
        [("delete", {"path": "notes.txt"})],
        [("delete", {"path": "/etc"})],
        [("delete", {"path": "boom"})],
    )
    async with build_oracle(db, Kit(counting_tool(log, approval=big)), model=model) as oracle:
        free = await oracle.run("a", "small")
        held = await oracle.run("b", "big")
        unsure = await oracle.run("c", "boom")

    assert free.status == "completed"
    assert held.status == unsure.status == "waiting_for_approval"
    assert "approval rule failed" in (unsure.operations[0].reason or "")
    assert executions(log) == ["notes.txt"]


async def test_a_plugin_default_applies_to_tools_that_say_nothing(db: Path, log: Path) -> None:
    quiet = counting_tool(log, name="quiet", approval=None)
    opted_out = counting_tool(log, name="free", approval=False)
    model = CallsThenText([("quiet", {"path": "q"}), ("free", {"path": "f"})])
    async with build_oracle(db, Kit(quiet, opted_out, approval=True), model=model) as oracle:
        result = await oracle.run("t", "go")

    assert [o.tool for o in result.operations] == ["quiet"]
    assert executions(log) == ["f"]


async def test_the_operator_lists_tools_that_always_need_approval(db: Path, log: Path) -> None:
    free = counting_tool(log, name="free", approval=False)
    model = CallsThenText([("free", {"path": "f"}), ("ping", {})])
    toml = '[approvals]\ntools = ["kit.free", "ping"]\n'
    async with build_oracle(db, Kit(free, ping), model=model, toml=toml) as oracle:
        result = await oracle.run("t", "go")

    assert sorted(o.tool for o in result.operations) == ["free", "ping"]
    assert all("oracle.toml" in (o.reason or "") for o in result.operations)
    assert executions(log) == []


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[approvals]\ntools = "kit.free"\n', "tools"),
        ("[approvals]\ntools = [1]\n", "tools"),
        ('[approvals]\ndeadline = "soon"\n', "deadline"),
        ("[approvals]\ndeadline = -1\n", "deadline"),
        ("[approvals]\ndeadline = true\n", "deadline"),
        ("[approvals]\nwho = 1\n", "who"),
        ('approvals = "yes"\n', "approvals is a string; expected a table"),
    ],
)
async def test_a_bad_approvals_table_is_refused_naming_the_key(
    db: Path, log: Path, toml: str, key: str
) -> None:
    # A table that is no table is refused with the settings, when the oracle is built
    # (ConfigError); a bad key inside it by the approvals rules, when it starts.
    with pytest.raises((ApprovalConfigError, ConfigError), match=key):
        oracle = build_oracle(db, Kit(ping), toml=toml)
        try:
            await oracle.start()
        finally:
            await oracle.close()


def test_tool_refuses_an_approval_that_is_neither_a_bool_nor_a_function() -> None:
    from oracle_core import ToolDefinitionError

    with pytest.raises(ToolDefinitionError, match="approval must be"):

        @tool(approval="yes")  # type: ignore[arg-type]
        def nope() -> str:
            """Nope."""
            return ""


# -- scripts ----------------------------------------------------------------------------------


def test_decide_sync_works_for_scripts(db: Path, log: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        waited = oracle.run_sync("t", "delete")
        (operation,) = oracle.operations_sync(status="pending")
        result = oracle.decide_sync(operation.id, approve=True)
        shown = oracle.operation_sync(operation.id)

    assert waited.status == "waiting_for_approval"
    assert result.to_json()["operations"] == []
    assert waited.to_json()["operations"][0]["arguments"] == {"path": "a.txt"}
    assert shown.status == "approved"
    assert executions(log) == ["a.txt"]


async def test_the_resumed_run_is_published_to_the_threads_followers(db: Path, log: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        (operation,) = (await waiting(oracle)).operations
        async with oracle.checkpointer.events.subscribe("t") as follower:
            await oracle.decide(operation.id, approve=True)
            seen = []
            while not seen or seen[-1]["type"] != "done":
                event = await follower.next()
                assert event is not None
                seen.append(event)

    assert seen[0] == {"type": "run_started", "run_id": operation.run_id, "thread_id": "t"}
    assert seen[-1]["status"] == "completed"
    assert "operation_updated" in [e["type"] for e in seen]


async def test_a_new_message_after_the_deadline_says_how_to_resume_the_denial(
    db: Path, log: Path
) -> None:
    now = {"offset": 0.0}
    model = CallsThenText([("delete", {"path": "a.txt"})])
    clock = lambda: time.time() + now["offset"]  # noqa: E731
    toml = "[approvals]\ndeadline = 5\n"
    async with build_oracle(db, Kit(counting_tool(log)), model=model, clock=clock, toml=toml) as o:
        (operation,) = (await waiting(o)).operations
        now["offset"] = 6.0
        refused = await o.run("t", "hello?")

    assert "it was denied but its run did not resume yet" in (refused.error or "")
    assert f"oracle operations deny {operation.id}" in (refused.error or "")


async def test_a_denial_without_a_reason_tells_the_model_no_reason(db: Path, log: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        held = await waiting(oracle)
        [operation] = held.operations
        await oracle.decide(operation.id, approve=False)
        state = await oracle.checkpointer.load("t")

    answer = error_of(tool_messages(state.messages)[-1])
    assert operation.reason and operation.reason not in answer
    assert answer == "A person declined this call; it did not run."
