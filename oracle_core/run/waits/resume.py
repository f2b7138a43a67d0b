"""Resuming: a run whose first step answers its settled operation, exactly once.

A resumed run is an ordinary :class:`~oracle_core.run.loop.Run` of the waiting run's
state with :class:`ResumeStep` as its first step. It takes the thread's lock and lease
like any run (with a lease owner of its own, so two resumers never share one), then
claims the operation in the store. Only the claimer goes on; anyone else stops before
touching the thread. The claimer then answers the call that waited:

- ``approved`` / ``supplied``: the saved call runs through the tool executor with exactly
  the saved canonical arguments (never arguments rebuilt from the thread's messages),
  checked against the saved digest, past every wait kind it already satisfied, and
  without plugin middleware (it could change the call that was approved);
- ``denied``: a tool message saying that a person declined, with the reason;
- ``cancelled``: a tool message saying so, and the run ends ``cancelled``.

If the thread already holds the answer (a claimer died after saving it) it is not made
again; if an earlier claimer died while the approved call may have been running, the call
is not run a second time: the model is told it was interrupted. Once no call of the model
response waits any more, the model loop continues as in any run. The operation is marked
carried on, with the outcome, before the thread's lease is given back.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from oracle_core.errors import ThreadBusyError
from oracle_core.models.wire import tool_message
from oracle_core.run.deps import RunDeps
from oracle_core.run.gated import offered_by
from oracle_core.run.loop import Run
from oracle_core.run.opening import unanswered_calls
from oracle_core.run.saving import (
    cleaned,
    finish_step,
    interrupted_results,
    requested,
    save,
    waiting_status,
)
from oracle_core.run.state import RunState, new_run_id
from oracle_core.values.events import Event, OperationUpdated, ToolResultEvent
from oracle_core.values.messages import ToolCall, ToolResult
from oracle_core.values.operations import OFFERED, RUNNABLE_STATUSES, Operation
from oracle_core.values.run_options import options_from_json
from oracle_core.values.threads import RunRecord
from oracle_core.values.tool_errors import failed_call

log = logging.getLogger("oracle_core.run")

INTERRUPTED_CALL = (
    "the approved call was interrupted (the process running it stopped); it may or may not "
    "have taken effect, and it was not run again"
)


class NotClaimedError(ThreadBusyError):
    """Another caller carries this operation on (or already did); this one stops untouched."""


def outcome(state: RunState, failure: str | None) -> dict[str, Any]:
    """What an operation carried on records of the run that carried it on (``failure``: why
    its steps raised, else ``None``)."""
    return {
        "run_id": state.record.id,
        "thread_id": state.thread_id,
        "status": "failed" if failure is not None else state.record.status,
        "answer": state.answer,
        "error": failure if failure is not None else state.record.error,
        "usage": state.record.usage.as_dict(),
        "operations": [o.to_json() for o in state.waiting],
    }


def declined(operation: Operation) -> ToolResult:
    """The answer to a denied (or cancelled) call: it did not run."""
    if operation.status == "cancelled":
        text = "A person cancelled this call; it did not run."
    else:
        text = "A person declined this call; it did not run."
    if operation.reason:
        text += f" Reason: {operation.reason}"
    return failed_call(operation.call_id, operation.tool, text)


def resumed_state(operation: Operation, *, stream: bool = False) -> RunState:
    """The state the waiting run of ``operation`` is carried on from (read on opening)."""
    return RunState(
        RunRecord(id=operation.run_id, thread_id=operation.thread_id),
        f"{operation.run_id}:{new_run_id()}",  # a lease owner unique per resume attempt
        user_id=operation.user_id,
        stream=stream,
    )


def resumed_run(deps: RunDeps, operation: Operation, *, stream: bool = False) -> Run:
    """The waiting run of ``operation`` (settled: any status but open), to carry on once.

    An ordinary :class:`~oracle_core.run.loop.Run` whose first step is a
    :class:`ResumeStep` (``run.first``), which says afterwards whether it was claimed.
    """
    return Run(deps, resumed_state(operation, stream=stream), ResumeStep(operation))


class ResumeStep:
    """The first step of a resumed run: claim the settled operation, answer its call.

    Args:
        operation: the settled operation (any status but open).

    Attributes:
        claimed: the operation as this caller claimed it (``None``: not claimed).
        not_claimed: another caller carries it on (or did): nothing was touched.
    """

    def __init__(self, operation: Operation) -> None:
        self.operation = operation
        self.claimed: Operation | None = None
        self.not_claimed = False

    @property
    def public(self) -> bool:
        """Followers see the run once this caller claimed it (never a loser's stop)."""
        return self.claimed is not None

    async def open(self, deps: RunDeps, state: RunState) -> None:
        """Read the whole thread and the waiting run's record, then claim the operation.

        Raises:
            NotClaimedError: when another caller holds the claim (or carried it on).
        """
        store = deps.store
        saved = await store.load(state.thread_id)
        state.read(list(saved.messages), list(saved.message_tokens), list(saved.loaded_plugins))
        record = next((r for r in saved.runs if r.id == self.operation.run_id), None)
        if record is not None:
            state.record = record
            state.options = options_from_json(record.options)  # as the run was asked
        state.operations = True
        self.claimed = await store.claim_operation(self.operation.id, state.owner)
        if self.claimed is None:
            self.not_claimed = True
            raise NotClaimedError(
                f"operation {self.operation.id} is carried on by another caller, or was already"
            )
        self.operation = self.claimed
        state.record.status, state.record.error = "running", None
        # Saved before the call runs: if this process dies in it, the run reads as cut off,
        # and the process that resumes it claims the operation again (run/waits/cutoff.py).
        await save(deps, state, [])

    async def close(self, deps: RunDeps, state: RunState, failure: str | None) -> None:
        """Mark the operation carried on, with the run's outcome (still holding the lease)."""
        await deps.store.finish_operation(self.operation.id, state.owner, outcome(state, failure))

    async def answer(self, deps: RunDeps, state: RunState) -> AsyncIterator[Event]:
        """Answer the call that waited; the run goes on to the model only if nothing waits."""
        operation = self.operation
        unanswered = unanswered_calls(state.messages)
        if operation.call_id in unanswered:
            result = cleaned(await self._answer(deps, state))
            if result.operation is not None and result.operation.status == "pending":
                # The approved call now waits for something else (a connection).
                async for event in finish_step(deps, state, [result]):
                    yield event
                return
            await save(deps, state, [tool_message(result)], result.loaded)
            yield ToolResultEvent(
                result.call_id, result.name, result.content, result.is_error, result.refused
            )
            if result.operation is not None:
                yield OperationUpdated(result.operation.to_json())
        yield OperationUpdated(operation.to_json())
        if operation.status == "cancelled":
            state.record.status = "cancelled"
            await save(deps, state, [])
            return
        others = await self._still_waiting(deps, state, unanswered)
        if others:
            state.waiting = others
            state.record.status = waiting_status(others)
            await save(deps, state, [])
            for other in others:
                yield requested(other)
            return
        filled = interrupted_results(state.messages)  # calls of the response without an operation
        if filled:
            await save(deps, state, filled)

    async def _still_waiting(
        self, deps: RunDeps, state: RunState, unanswered: list[str]
    ) -> list[Operation]:
        """The other operations of this run whose calls still wait (open ones only)."""
        pending = set(unanswered) - {self.operation.call_id}
        if not pending:
            return []
        found = await deps.store.list_operations(thread_id=state.thread_id)
        mine = [o for o in found if o.run_id == state.record.id and o.call_id in pending]
        return [o for o in mine if o.kind != "background" and o.resumed_at is None]

    async def _answer(self, deps: RunDeps, state: RunState) -> ToolResult:
        """The tool result that answers the waiting call."""
        operation = self.operation
        if operation.status not in RUNNABLE_STATUSES:
            return declined(operation)
        if operation.claims > 1:
            return failed_call(operation.call_id, operation.tool, INTERRUPTED_CALL)
        call = ToolCall(
            id=operation.call_id,
            name=operation.tool,
            arguments=operation.arguments,  # the saved call: never the thread's copy
            thread_id=state.thread_id,
            run_id=state.record.id,
            loaded=tuple(state.loaded),
            user_id=operation.user_id,
        )
        allowed = self._allowed(deps, state)
        if operation.tool not in allowed:
            log.error(
                "operation %s of run %s: tool %r was not offered by the request it answers, "
                "or is not shown now; nothing ran",
                operation.id,
                operation.run_id,
                operation.tool,
            )
            return deps.gate.refused(call, state.loaded)
        satisfied = frozenset(operation.details.get("satisfied") or ()) | {operation.kind}
        # A connection is asked again: that check puts the credentials in the call's context,
        # and a second missing one (or one deleted meanwhile) must wait again, not fail.
        satisfied -= {"connection"}
        result = await deps.executor.execute(
            call,
            deps.capabilities.state(state.loaded),
            deps.middleware.notify,
            satisfied=satisfied,
            digest=operation.digest,
        )
        if result.operation is not None and result.operation.status == "pending":
            result = result.replace(operation=offered_by(result.operation, allowed))
        return result if result.call_id == call.id else result.replace(call_id=call.id)

    def _allowed(self, deps: RunDeps, state: RunState) -> frozenset[str]:
        """The tools the saved call may be of: offered by its request *and* shown now.

        The gate is asked again before anything runs: the operation's record of what its
        request offered (:data:`~oracle_core.values.operations.OFFERED`; an operation without
        one offered nothing), and the current catalog on the thread as it is now. Only a
        plugin tool of the plugin the operation names may run.
        """
        operation = self.operation
        offered = operation.details.get(OFFERED)
        if not isinstance(offered, list | tuple):
            return frozenset()
        bound = deps.executor.registry.tools.get(operation.tool)
        if bound is None or bound.plugin.name != operation.plugin:
            return frozenset()
        shown = deps.gate.names(state.loaded, operations=True)
        return shown & frozenset(n for n in offered if isinstance(n, str))
