"""Background tool calls: the id at once, inspect and cancel, and the result reaching the thread."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from waits_support import (
    FunctionModel,
    Kit,
    build_oracle,
    calls,
    counting_tool,
    last_tool_json,
    text,
)

from oracle_core import (
    ModelRequest,
    ModelResponse,
    Operation,
    OperationUpdated,
    ToolContext,
    tool,
)
from oracle_core.capabilities.meta_tools import GET_OPERATION, META_TOOLS
from oracle_core.run.waits.background import CLOSED_ERROR
from oracle_core.values.tokens import count_json_tokens


class Gate:
    """An async background tool that works until released (or cancelled)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.cancelled = False

        @tool(background=True)
        async def crunch(n: int) -> dict[str, int]:
            """Crunch numbers for a long time."""
            self.started.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
            return {"sum": n * 2}

        self.tool = crunch


def start_then(answer: Any) -> FunctionModel:
    """A model: on the first user message call crunch(21); otherwise ``answer(request)``."""

    def reply(request: ModelRequest) -> ModelResponse:
        if (
            request.messages[-1].get("role") == "user"
            and request.step == 1
            and not any(m.get("role") == "tool" for m in request.messages)
        ):
            return calls(("crunch", {"n": 21}))
        return answer(request)

    return FunctionModel(reply)


async def background(oracle: Any) -> Any:
    return (await oracle.run_deps()).executor.background


async def test_a_background_call_answers_with_its_operation_id_at_once_and_goes_on(
    db: Path,
) -> None:
    gate = Gate()
    model = start_then(lambda r: text(json.dumps(last_tool_json(r))))
    async with build_oracle(db, Kit(gate.tool), model=model) as oracle:
        events = [e async for e in oracle.stream("t", "crunch it")]
        answer = json.loads(events[-1].answer)  # type: ignore[attr-defined]
        running = await oracle.operation(answer["operation"])
        gate.release.set()
        await (await background(oracle)).wait(running.id)
        done = await oracle.operation(running.id)

    assert events[-1].status == "completed"  # type: ignore[attr-defined]
    assert answer["status"] == "running" and GET_OPERATION in answer["note"]
    assert [e.operation["id"] for e in events if isinstance(e, OperationUpdated)] == [running.id]
    assert (running.kind, running.status, running.tool) == ("background", "running", "crunch")
    assert (done.status, done.result) == ("completed", '{"sum": 42}')


async def test_get_operation_is_sent_only_on_threads_that_have_an_operation(db: Path) -> None:
    gate = Gate()
    model = start_then(lambda r: text("ok"))
    async with build_oracle(db, Kit(gate.tool), model=model) as oracle:
        await oracle.run("t", "crunch it")
        await oracle.run("quiet", "hello")  # the model answers crunch again: a new thread
        gate.release.set()

    first, second, third = (list(r.tool_names) for r in model.requests[:3])
    assert GET_OPERATION not in first  # the thread had no operation yet
    assert second[: len(META_TOOLS) + 1] == [*(t.name for t in META_TOOLS), GET_OPERATION]
    assert GET_OPERATION not in third
    assert sum(count_json_tokens(t.openai_schema()) for t in META_TOOLS) <= 130


async def test_the_model_inspects_an_operation_of_its_own_thread_only(db: Path) -> None:
    gate = Gate()
    seen: dict[str, Any] = {}

    def answer(request: ModelRequest) -> ModelResponse:
        result = last_tool_json(request)
        if "operation" in result:  # crunch just answered: look it up
            seen["id"] = result["operation"]
            return calls((GET_OPERATION, {"id": result["operation"]}), prefix="look")
        seen["view"] = result
        return text("ok")

    def spy(request: ModelRequest) -> ModelResponse:
        if request.step == 1:  # another thread asks for t's operation, and for an unknown id
            return calls((GET_OPERATION, {"id": seen["id"]}), (GET_OPERATION, {"id": "op_nope"}))
        tools = [m["content"] for m in request.messages if m.get("role") == "tool"]
        return text(json.dumps([json.loads(c) for c in tools[-2:]]))

    async with (
        build_oracle(db, Kit(gate.tool), model=start_then(answer)) as oracle,
        build_oracle(db, Kit(gate.tool), model=FunctionModel(spy)) as other,  # same file
    ):
        await oracle.run("t", "crunch it")
        await other.checkpointer.insert_operation(  # t2 has an operation: get_operation shows
            Operation(id="op_t2", kind="approval", status="denied", thread_id="t2", run_id="r")
        )
        theirs, unknown = json.loads((await other.run("t2", "look at theirs")).answer)
        gate.release.set()

    view = seen["view"]
    assert (view["id"], view["status"], view["kind"]) == (seen["id"], "running", "background")
    assert theirs == {"error": f"operation '{seen['id']}' was not found on this thread"}
    assert unknown == {"error": "operation 'op_nope' was not found on this thread"}


async def test_cancelling_stops_an_async_background_call(db: Path) -> None:
    gate = Gate()
    model = start_then(lambda r: text(json.dumps(last_tool_json(r))))
    async with build_oracle(db, Kit(gate.tool), model=model) as oracle:
        result = await oracle.run("t", "crunch it")
        operation_id = json.loads(result.answer)["operation"]
        await gate.started.wait()
        cancelled = await oracle.cancel_operation(operation_id)
        await (await background(oracle)).wait(operation_id)
        after = await oracle.operation(operation_id)

    assert cancelled.status == after.status == "cancelled"
    assert gate.cancelled


async def test_a_sync_background_call_sees_its_cancellation_flag(db: Path) -> None:
    entered, stopped = threading.Event(), threading.Event()

    @tool(background=True)
    def scan(ctx: ToolContext) -> str:
        """Scan slowly, checking for cancellation."""
        entered.set()
        while not ctx.cancellation.wait(0.01):
            pass
        stopped.set()
        return "stopped"

    model = FunctionModel(
        lambda r: calls(("scan", {})) if r.step == 1 else text(json.dumps(last_tool_json(r)))
    )
    async with build_oracle(db, Kit(scan), model=model) as oracle:
        operation_id = json.loads((await oracle.run("t", "scan")).answer)["operation"]
        await asyncio.to_thread(entered.wait, 30)
        await oracle.cancel_operation(operation_id)
        await (await background(oracle)).wait(operation_id)
        after = await oracle.operation(operation_id)

    assert stopped.is_set()
    assert after.status == "cancelled"


async def test_the_model_may_cancel_its_own_background_call(db: Path) -> None:
    gate = Gate()

    def answer(request: ModelRequest) -> ModelResponse:
        result = last_tool_json(request)
        if "operation" in result:
            return calls((GET_OPERATION, {"id": result["operation"], "cancel": True}), prefix="x")
        return text(json.dumps(result))

    async with build_oracle(db, Kit(gate.tool), model=start_then(answer)) as oracle:
        result = await oracle.run("t", "crunch it, then stop")
        view = json.loads(result.answer)
        await (await background(oracle)).wait(view["id"])

    assert view["status"] == "cancelled"
    assert gate.cancelled


async def test_a_finished_result_reaches_the_thread_once_as_a_message_the_next_run_sees(
    db: Path,
) -> None:
    gate = Gate()
    model = start_then(lambda r: text("later"))
    async with build_oracle(db, Kit(gate.tool), model=model) as oracle:
        await oracle.run("t", "crunch it")
        operation_id = (await oracle.operations(thread_id="t"))[0].id
        gate.release.set()
        await (await background(oracle)).wait(operation_id)
        await oracle.run("t", "is it done?")
        await oracle.run("t", "and now?")
        handed = await oracle.operation(operation_id)

    second, third = model.requests[2].messages, model.requests[3].messages
    delivered = [m for m in second if m.get("role") == "tool" and operation_id in m["content"]]
    assert [json.loads(m["content"])["status"] for m in delivered] == ["running", "completed"]
    call, answer, user = second[-3:]
    assert call["tool_calls"][0]["function"]["name"] == GET_OPERATION
    assert json.loads(answer["content"])["result"] == '{"sum": 42}'
    assert user == {"role": "user", "content": "is it done?"}
    assert len([m for m in third if m.get("role") == "tool" and "sum" in m["content"]]) == 1
    assert handed.resumed_at is not None


async def test_a_result_the_model_already_read_is_not_handed_over_again(db: Path) -> None:
    gate = Gate()
    gate.release.set()  # it finishes at once
    holder: dict[str, Any] = {}

    class Peeker(FunctionModel):
        async def complete(self, request: ModelRequest) -> ModelResponse:
            self.requests.append(request)
            if len(self.requests) == 1:
                return calls(("crunch", {"n": 1}))
            if len(self.requests) == 2:  # wait for the work, then read it with get_operation
                started = last_tool_json(request)["operation"]
                await holder["background"].wait(started)
                return calls((GET_OPERATION, {"id": started}), prefix="peek")
            return text(json.dumps(last_tool_json(request)) if len(self.requests) == 3 else "ok")

    model = Peeker(lambda r: text(""))
    async with build_oracle(db, Kit(gate.tool), model=model) as oracle:
        holder["background"] = await background(oracle)
        peek = await oracle.run("t", "crunch it and look")
        await oracle.run("t", "anything new?")

    assert json.loads(peek.answer)["status"] == "completed"
    last = model.requests[-1].messages
    assert sum(1 for m in last if m.get("role") == "tool" and "sum" in m["content"]) == 1


async def test_a_failing_background_call_records_its_error(db: Path) -> None:
    @tool(background=True)
    async def explode() -> str:
        """Fail."""
        raise ValueError("kaboom")

    model = FunctionModel(
        lambda r: calls(("explode", {})) if r.step == 1 else text(json.dumps(last_tool_json(r)))
    )
    async with build_oracle(db, Kit(explode), model=model) as oracle:
        operation_id = json.loads((await oracle.run("t", "go")).answer)["operation"]
        await (await background(oracle)).wait(operation_id)
        failed = await oracle.operation(operation_id)

    assert failed.status == "failed"
    assert failed.error == "explode failed: ValueError: kaboom"


async def test_a_background_call_that_needs_approval_starts_only_once_approved(
    db: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log"

    @tool(background=True, approval=True)
    async def wipe(path: str) -> str:
        """Wipe a path."""
        log.write_text(path)
        return "wiped"

    model = FunctionModel(
        lambda r: (
            calls(("wipe", {"path": "/tmp/x"}))
            if r.step == 1
            else text(json.dumps(last_tool_json(r)))
        )
    )
    async with build_oracle(db, Kit(wipe), model=model) as oracle:
        waited = await oracle.run("t", "wipe")
        assert not log.exists()
        resumed = await oracle.decide(waited.operations[0].id, approve=True)
        started = json.loads(resumed.answer)["operation"]
        await (await background(oracle)).wait(started)
        done = await oracle.operation(started)

    assert waited.status == "waiting_for_approval"
    assert (done.kind, done.status, done.result) == ("background", "completed", "wiped")
    assert log.read_text() == "/tmp/x"


async def test_closing_the_oracle_fails_its_running_background_calls(db: Path) -> None:
    gate = Gate()
    model = start_then(lambda r: text(json.dumps(last_tool_json(r))))
    oracle = build_oracle(db, Kit(gate.tool), model=model)
    async with oracle:
        operation_id = json.loads((await oracle.run("t", "crunch")).answer)["operation"]
    async with build_oracle(db, Kit(gate.tool)) as reopened:
        after = await reopened.operation(operation_id)

    assert (after.status, after.error) == ("failed", CLOSED_ERROR)


def test_counting_tool_helper_is_importable() -> None:
    assert counting_tool(Path("/nonexistent")).approval is True


async def test_get_operation_is_refused_on_a_thread_without_operations(db: Path) -> None:
    model = FunctionModel(
        lambda r: (
            calls((GET_OPERATION, {"id": "op_x"}))
            if r.step == 1
            else text(json.dumps(last_tool_json(r)))
        )
    )
    async with build_oracle(db, Kit(Gate().tool), model=model) as oracle:
        result = await oracle.run("t", "peek")

    assert "does not exist" in json.loads(result.answer)["error"]
    assert [e for e in result.events if getattr(e, "refused", False)]


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"id": 5},
        {"id": None},
        {"id": ["op_x"]},
        {"id": "op_x", "cancel": "yes"},
        {"id": "op_x", "cancel": 1},
        {"id": "x" * 10_000},
        {"id": "op_\u0000\ud800"},
        "not json",
        "[]",
    ],
)
async def test_get_operation_answers_bad_arguments_with_an_error_and_changes_nothing(
    db: Path, arguments: Any
) -> None:
    gate = Gate()

    def answer(request: ModelRequest) -> ModelResponse:
        result = last_tool_json(request)
        if "operation" in result and "note" in result:
            return calls((GET_OPERATION, arguments), prefix="bad")
        return text(json.dumps(result))

    async with build_oracle(db, Kit(gate.tool), model=start_then(answer)) as oracle:
        result = await oracle.run("t", "crunch")
        (operation,) = await oracle.operations()
        gate.release.set()

    assert "error" in json.loads(result.answer)
    assert operation.status == "running"  # nothing was cancelled


async def test_the_prompt_report_shows_get_operation_only_where_the_model_would_see_it(
    db: Path,
) -> None:
    gate = Gate()
    async with build_oracle(db, Kit(gate.tool), model=start_then(lambda r: text("ok"))) as oracle:
        await oracle.run("t", "crunch it")
        with_ops = await oracle.prompt_report("t")
        without = await oracle.prompt_report("fresh")
        gate.release.set()

    names = [t["function"]["name"] for t in with_ops["tools"]]
    assert GET_OPERATION in names and with_ops["tokens"]["per_tool"][GET_OPERATION] > 0
    assert GET_OPERATION not in [t["function"]["name"] for t in without["tools"]]
    assert with_ops["tokens"]["meta_tools"] > without["tokens"]["meta_tools"]
