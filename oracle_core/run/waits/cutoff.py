"""Resuming a run cut off by the end of its process: its first step after the crash.

A run whose process died (a crash, a deploy, ``kill -9``) stays ``running`` in the store
while its thread's lease expires. :class:`CutOffStep` carries it on from its last saved
step, as an ordinary :class:`~oracle_core.run.loop.Run` with a lease owner of its own, so
only one process ever resumes it (the lease's rule), and only while it is still cut off:

- the thread and the run's record are read again with the lease held; a record that is no
  longer ``running`` (it ended, a new message marked it ``interrupted``, another process
  resumed it) is left untouched (:class:`NotResumedError`);
- model calls whose responses were saved are not made again, and tool calls whose results
  were saved are not run again (both are in the thread);
- a call of the last saved response that has no result was in flight: it is run again,
  with the saved arguments, through the gate and the middleware, when its tool is declared
  safe to repeat (``@tool(idempotent=True)``); otherwise the model is told it was
  interrupted and may or may not have taken effect (:data:`INTERRUPTED_IN_FLIGHT`);
- a call that waits for an operation (an approval, a connection) is left to it: the run
  goes back to waiting, and the operation's decision resumes it, exactly once;
- a call whose decided operation was being carried on when the process died (inside an
  approved call) keeps the rule of :mod:`~oracle_core.run.waits.resume`: the operation is
  claimed again and the call is not run a second time (the model is told it was
  interrupted; a denied or cancelled one says so);
- then the model loop goes on, counting the steps the run already took against its step
  limit (:attr:`~oracle_core.run.state.RunState.steps_from`).

The run's first event after ``run_started`` is :class:`~oracle_core.values.events.RunResumed`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from oracle_core.errors import ThreadBusyError
from oracle_core.models.wire import read_calls
from oracle_core.run.deps import RunDeps
from oracle_core.run.loop import Run
from oracle_core.run.opening import unanswered_calls
from oracle_core.run.saving import call_name, finish_step, requested, save, waiting_status
from oracle_core.run.state import RunState, new_run_id
from oracle_core.run.waits.resume import INTERRUPTED_CALL, declined, outcome
from oracle_core.values.events import Event, OperationUpdated, RunResumed
from oracle_core.values.messages import Message, ToolResult
from oracle_core.values.operations import RUNNABLE_STATUSES, Operation
from oracle_core.values.run_options import options_from_json
from oracle_core.values.threads import RunRecord
from oracle_core.values.tool_errors import failed_call

CUT_OFF = "cut_off"
"""The ``reason`` of a :class:`RunResumed` event: no process held the run's thread any more."""

INTERRUPTED_IN_FLIGHT = (
    "this call was in progress when the process running it stopped; it may or may not have "
    "taken effect, and it was not run again"
)
"""What the model is told of a call that was in flight when its run was cut off."""


class NotResumedError(ThreadBusyError):
    """The run is no longer cut off (it ended, or another caller took it): nothing changed."""


def cut_off_run(deps: RunDeps, record: RunRecord) -> Run:
    """The cut-off run ``record`` as a run to carry on once (see :class:`CutOffStep`).

    Its state has a lease owner of its own, unique per attempt; the run's own record is
    read again once its thread is held.
    """
    state = RunState(
        RunRecord(id=record.id, thread_id=record.thread_id),
        f"{record.id}:{new_run_id()}",
        user_id=record.user_id,
        stream=False,
    )
    return Run(deps, state, CutOffStep(record.id))


class CutOffStep:
    """The first step of a run resumed after its process ended mid-run.

    Args:
        run_id: the cut-off run.

    Attributes:
        claimed: whether this caller resumes the run (it was still cut off).
        from_step: the model calls the run had saved when it was cut off.
    """

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.claimed = False
        self.from_step = 0
        self._waits: list[Operation] = []
        self._carried: list[Operation] = []

    @property
    def public(self) -> bool:
        """Followers see the run once this caller resumes it (never a loser's stop)."""
        return self.claimed

    async def open(self, deps: RunDeps, state: RunState) -> None:
        """Read the thread and the run's record; resume it only if it is still ``running``.

        The thread's lease is held by this caller (a fresh owner), so no process is working
        on the run: a record still ``running`` is cut off. The record is saved at once,
        counted as resumed, which moves the thread's base: a process that lost the lease
        but still writes gets a conflict instead of overwriting.

        Raises:
            NotResumedError: the run is not cut off any more (nothing was changed).
        """
        store = deps.store
        saved = await store.load(state.thread_id)
        record = next((r for r in saved.runs if r.id == self.run_id), None)
        if record is None or record.status != "running":
            status = "gone" if record is None else record.status
            raise NotResumedError(f"run {self.run_id} is not cut off any more ({status})")
        state.read(list(saved.messages), list(saved.message_tokens), list(saved.loaded_plugins))
        state.record = record
        state.user_id = record.user_id
        state.options = options_from_json(record.options)  # as the run was asked
        state.steps_from = 1  # the steps it took before count against its limit
        self.from_step = record.steps
        record.resumed += 1
        record.resumed_at = time.time()
        open_calls = set(unanswered_calls(state.messages))
        operations = await store.list_operations(thread_id=state.thread_id)
        state.operations = bool(operations)
        mine = [
            o
            for o in operations
            if o.run_id == record.id
            and o.call_id in open_calls
            and o.kind != "background"  # a background call answers at once: it was in flight
            and o.resumed_at is None
        ]
        await save(deps, state, [])
        self.claimed = True
        for operation in mine:
            taken = None
            if not operation.open and operation.claims:  # its claimer died carrying it on
                taken = await store.claim_operation(operation.id, state.owner)
            if taken is not None:
                self._carried.append(taken)
            else:
                self._waits.append(operation)

    async def answer(self, deps: RunDeps, state: RunState) -> AsyncIterator[Event]:
        """Say the run is resumed, then answer the calls it left in flight."""
        yield RunResumed(state.record.id, self.from_step, CUT_OFF)
        open_calls = unanswered_calls(state.messages)
        if not open_calls:
            return
        waited = {o.call_id for o in self._waits}
        carried = {o.call_id: o for o in self._carried}
        calls = [c for c in last_calls(state.messages) if str(c.get("id")) in open_calls]
        calls = [c for c in calls if str(c.get("id")) not in waited | set(carried)]
        again = [c for c in calls if idempotent(deps, call_name(c))]
        results: dict[str, ToolResult] = {}
        loads: tuple[str, ...] = ()
        if again:
            gate = deps.gate
            allowed = gate.shown(gate.names(state.loaded, operations=state.operations))
            asked = read_calls(again)
            await deps.guards.before_tools(state, asked)
            ran, loads = await Run(deps, state).run_tools(asked, allowed)
            await deps.guards.after_tools(state, ran)
            results = {r.call_id: r for r in ran}
        answers = [results.get(str(c["id"])) or interrupted_result(c) for c in calls]
        answers += [carried_result(o) for o in self._carried]
        async for event in finish_step(deps, state, answers, loads):
            yield event
        for operation in self._carried:
            yield OperationUpdated(operation.to_json())
        if any(o.status == "cancelled" for o in self._carried) and state.running:
            state.record.status = "cancelled"
            await save(deps, state, [])
        if self._waits and state.running:  # the operations resume the run when settled
            state.waiting = list(self._waits)
            state.record.status = waiting_status(self._waits)
            await save(deps, state, [])
            for operation in self._waits:
                if operation.status == "pending":
                    yield requested(operation)

    async def close(self, deps: RunDeps, state: RunState, failure: str | None) -> None:
        """Mark the operations it claimed carried on, with the run's outcome."""
        carried = outcome(state, failure)
        for operation in self._carried:
            await deps.store.finish_operation(operation.id, state.owner, carried)


def last_calls(messages: list[Message]) -> list[dict[str, Any]]:
    """The tool calls of the thread's last model response (``[]``: none)."""
    for message in reversed(messages):
        if message.get("role") == "tool":
            continue
        return [dict(c) for c in message.get("tool_calls") or []]
    return []


def idempotent(deps: RunDeps, name: str) -> bool:
    """Whether the tool ``name`` is declared safe to run twice (``@tool(idempotent=True)``)."""
    bound = deps.executor.registry.tools.get(name)
    return bound is not None and bound.tool.idempotent is True


def carried_result(operation: Operation) -> ToolResult:
    """The answer to a decided call whose earlier claimer died carrying it on: not run again."""
    if operation.status not in RUNNABLE_STATUSES:
        return declined(operation)
    return failed_call(operation.call_id, operation.tool, INTERRUPTED_CALL)


def interrupted_result(call: Mapping[str, Any]) -> ToolResult:
    """The answer to a call that was in flight when its run was cut off, not run again."""
    return failed_call(str(call["id"]), call_name(call), INTERRUPTED_IN_FLIGHT)
