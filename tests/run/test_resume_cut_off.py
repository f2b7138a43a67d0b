"""Runs cut off by the end of their process, resumed by the sweeper (in one process).

The cut-off thread is written to the store as a dead process leaves it (a ``running`` run,
no live lease); the tests with real processes killed mid-run are in
``test_resume_cut_off_processes.py``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import ToolsPlugin

from oracle_core import Oracle, Settings, tool
from oracle_core.store import Checkpointer, MemoryCheckpointer, SQLiteCheckpointer
from oracle_core.testing import ScriptedModel
from oracle_core.values.messages import Message
from oracle_core.values.threads import RunRecord

Counts = dict[str, int]


@pytest.fixture
def counts() -> Counts:
    return {}


@pytest.fixture
def kit(counts: Counts) -> Any:
    @tool
    def send(text: str) -> str:
        """Send a text (not safe to repeat)."""
        counts["send"] = counts.get("send", 0) + 1
        return f"sent {text}"

    @tool(idempotent=True)
    def lookup(text: str) -> str:
        """Look a text up (safe to repeat)."""
        counts["lookup"] = counts.get("lookup", 0) + 1
        return f"found {text}"

    return ToolsPlugin(send, lookup)


def call(call_id: str, name: str, text: str) -> dict[str, Any]:
    arguments = json.dumps({"text": text})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


CUT_IN_TOOLS: list[Message] = [
    {"role": "user", "content": "send and look up"},
    {"role": "assistant", "content": None, "tool_calls": [call("c1", "send", "first")]},
    {"role": "tool", "tool_call_id": "c1", "content": "sent first"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("c2", "send", "second"), call("c3", "lookup", "x")],
    },
]
"""A thread cut off while the calls of its second step were running (none saved)."""


async def cut_off(
    store: Checkpointer, messages: list[Message], *, steps: int, age: float = 0.0
) -> RunRecord:
    """Save ``messages`` and a ``running`` run of ``steps`` steps, as a dead process left them."""
    now = time.time()
    run = RunRecord(
        id="run_cut", thread_id="t", steps=steps, user_id="ann", created_at=now - age,
        updated_at=now - age,
    )  # fmt: skip
    await store.append("t", base=0, messages=messages, run=run)
    return run


def make(tmp_path: Path, store: Checkpointer, kit: Any, model: ScriptedModel, **env: str) -> Oracle:
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path / "home"), **env})
    return Oracle([kit], entry_points=False, settings=settings, model=model, checkpointer=store)


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as scripted:
        yield scripted


async def test_a_run_cut_off_in_its_tools_is_finished_and_only_the_idempotent_call_runs_again(
    tmp_path: Path, kit: Any, counts: Counts, model: ScriptedModel
) -> None:
    store = MemoryCheckpointer()
    await cut_off(store, CUT_IN_TOOLS, steps=2)
    model.reply_text("all done")
    oracle = make(tmp_path, store, kit, model)
    sweeper = oracle.resume_cut_off_runs()
    assert sweeper is not None
    events: list[dict[str, Any]] = []

    async def follow() -> None:
        async with store.events.subscribe("t") as follower:
            async for event in follower:
                events.append(event)
                if event["type"] == "done":
                    return

    following = asyncio.create_task(follow())
    await asyncio.sleep(0)  # subscribed before the sweep
    try:
        assert await sweeper.sweep() == ["run_cut"]
        await asyncio.wait_for(following, 10)
    finally:
        await oracle.close()

    state = await store.load("t")
    assert counts == {"lookup": 1}  # "send" was in flight: not run again
    tools = {m["tool_call_id"]: m["content"] for m in state.messages if m["role"] == "tool"}
    assert tools["c1"] == "sent first"
    assert "may or may not have taken effect" in json.loads(tools["c2"])["error"]
    assert tools["c3"] == "found x"
    assert [m["content"] for m in state.messages if m["role"] == "assistant"][-1] == "all done"
    (run,) = state.runs
    assert (run.status, run.steps, run.resumed, run.user_id) == ("completed", 3, 1, "ann")
    assert run.resumed_at is not None
    assert len(model.requests) == 1  # the two saved model calls were not made again
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["run_started", "run_resumed"]
    assert events[1] == {"type": "run_resumed", "run_id": "run_cut", "from_step": 2,
                         "reason": "cut_off"}  # fmt: skip
    assert kinds[-1] == "done" and events[-1]["answer"] == "all done"


async def test_a_resumed_run_keeps_the_step_limit_of_the_whole_run(
    tmp_path: Path, kit: Any, counts: Counts, model: ScriptedModel
) -> None:
    store = MemoryCheckpointer()
    await cut_off(store, CUT_IN_TOOLS, steps=2)
    oracle = make(tmp_path, store, kit, model, ORACLE_MAX_STEPS="2")
    sweeper = oracle.resume_cut_off_runs()
    assert sweeper is not None
    try:
        await sweeper.sweep()
    finally:
        await oracle.close()

    (run,) = (await store.load("t")).runs
    assert run.status == "failed" and run.error and "step limit" in run.error
    assert model.requests == []  # its two steps were the limit


async def test_a_run_cut_off_longer_ago_than_the_max_age_is_marked_interrupted(
    tmp_path: Path, kit: Any, counts: Counts, model: ScriptedModel
) -> None:
    store = MemoryCheckpointer()
    await cut_off(store, CUT_IN_TOOLS, steps=2, age=120)
    oracle = make(tmp_path, store, kit, model, ORACLE_RESUME_MAX_AGE="60")
    sweeper = oracle.resume_cut_off_runs()
    assert sweeper is not None
    try:
        assert await sweeper.sweep() == []
    finally:
        await oracle.close()

    (run,) = (await store.load("t")).runs
    assert run.status == "interrupted" and counts == {} and model.requests == []


async def test_with_resuming_off_the_start_marks_a_cut_off_run_interrupted(
    tmp_path: Path, kit: Any, model: ScriptedModel
) -> None:
    store = MemoryCheckpointer()
    await cut_off(store, CUT_IN_TOOLS, steps=2)
    oracle = make(tmp_path, store, kit, model, ORACLE_RESUME_RUNS="0")
    try:
        assert oracle.resume_cut_off_runs() is None
        await oracle.start()
    finally:
        await oracle.close()

    assert [r.status for r in (await store.load("t")).runs] == ["interrupted"]


async def test_a_new_message_before_the_sweep_marks_the_cut_off_run_interrupted(
    tmp_path: Path, kit: Any, counts: Counts, model: ScriptedModel
) -> None:
    store = MemoryCheckpointer()
    await cut_off(store, CUT_IN_TOOLS, steps=2)
    model.reply_text("hello again")
    oracle = make(tmp_path, store, kit, model)
    sweeper = oracle.resume_cut_off_runs()
    assert sweeper is not None
    try:
        result = await oracle.run("t", "never mind")
        assert await sweeper.sweep() == []
    finally:
        await oracle.close()

    assert result.answer == "hello again"
    assert [r.status for r in (await store.load("t")).runs] == ["interrupted", "completed"]
    assert counts == {}


async def test_two_processes_sweeping_one_file_resume_a_cut_off_run_once(
    tmp_path: Path, kit: Any, counts: Counts
) -> None:
    path = tmp_path / "oracle.db"
    await cut_off(SQLiteCheckpointer(path), CUT_IN_TOOLS, steps=2)
    models = [ScriptedModel().respond_with(lambda _: "done") for _ in range(2)]
    oracles = [make(tmp_path, SQLiteCheckpointer(path), kit, m) for m in models]
    sweepers = [o.resume_cut_off_runs() for o in oracles]
    try:
        for oracle in oracles:
            await oracle.start()
        resumed = await asyncio.gather(*(s.sweep() for s in sweepers if s is not None))
    finally:
        for oracle in oracles:
            await oracle.close()

    assert sorted(resumed) == [[], ["run_cut"]]
    assert counts == {"lookup": 1}
    assert sum(len(m.requests) for m in models) == 1


async def test_a_run_cut_off_after_its_call_began_to_wait_waits_again_and_runs_it_once(
    tmp_path: Path, counts: Counts, model: ScriptedModel
) -> None:
    @tool(approval=True)
    def pay(amount: int) -> str:
        """Pay an amount (a person approves)."""
        counts["pay"] = counts.get("pay", 0) + 1
        return f"paid {amount}"

    store = MemoryCheckpointer()
    model.reply_tool_call("pay", {"amount": 5}).reply_text("paid it")
    oracle = make(tmp_path, store, ToolsPlugin(pay), model)
    sweeper = oracle.resume_cut_off_runs()
    assert sweeper is not None
    try:
        waiting = await oracle.run("t", "pay 5")
        assert waiting.status == "waiting_for_approval"
        (operation,) = waiting.operations
        # As a crash leaves it between saving the wait and saving the run's waiting status.
        (record,) = (await store.load("t")).runs
        record.status = "running"
        await store.append("t", base=0, run=record)

        assert await sweeper.sweep() == [record.id]
        (again,) = (await store.load("t")).runs
        assert again.status == "waiting_for_approval" and counts == {}

        done = await oracle.decide(operation.id, approve=True)
    finally:
        await oracle.close()

    assert (done.status, done.answer, counts) == ("completed", "paid it", {"pay": 1})


async def test_a_resumption_that_meets_the_run_s_process_still_writing_gives_way(
    tmp_path: Path, counts: Counts, model: ScriptedModel
) -> None:
    path = tmp_path / "oracle.db"
    alive = SQLiteCheckpointer(path)  # the process thought dead, still writing

    @tool(idempotent=True)
    def lookup(text: str) -> str:
        """Look a text up (safe to repeat)."""
        counts["lookup"] = counts.get("lookup", 0) + 1
        late = {"role": "tool", "tool_call_id": "c3", "content": "found late"}
        asyncio.run(alive.append("t", base=4, messages=[late]))
        return f"found {text}"

    @tool
    def send(text: str) -> str:
        """Send a text."""
        return f"sent {text}"

    await cut_off(alive, CUT_IN_TOOLS, steps=2)
    oracle = make(tmp_path, SQLiteCheckpointer(path), ToolsPlugin(send, lookup), model)
    sweeper = oracle.resume_cut_off_runs()
    assert sweeper is not None
    try:
        await sweeper.sweep()
    finally:
        await oracle.close()
        await alive.close()

    state = await SQLiteCheckpointer(path).load("t")
    assert [m.get("content") for m in state.messages[4:]] == ["found late"]  # nothing mixed in
    assert [(r.status, r.resumed) for r in state.runs] == [("running", 1)]  # left to it
    assert model.requests == []


@pytest.mark.parametrize(("value", "expected"), [(None, 4), ("1", 1), ("16", 16)])
def test_how_many_cut_off_runs_a_process_resumes_at_once_is_a_setting(
    tmp_path: Path, value: str | None, expected: int
) -> None:
    from oracle_core import Oracle, Settings

    env = {"ORACLE_HOME": str(tmp_path)}
    if value is not None:
        env["ORACLE_RESUME_CONCURRENCY"] = value
    oracle = Oracle(entry_points=False, settings=Settings.from_env(env), model="demo")

    sweeper = oracle.resume_cut_off_runs()

    assert sweeper is not None and sweeper.concurrency == expected


@pytest.mark.parametrize("value", ["0", "-2", "many", "1.5"])
def test_a_resume_concurrency_that_is_not_a_count_names_the_variable(value: str) -> None:
    from oracle_core import ConfigError, Settings

    with pytest.raises(ConfigError, match="ORACLE_RESUME_CONCURRENCY"):
        Settings.from_env({"ORACLE_RESUME_CONCURRENCY": value})
