"""A run carried on from a settled wait, exactly once.

:class:`ResumedRun` is the waiting run itself, continued: it takes the thread's lock and
lease like any run (with a lease owner of its own, so two resumers never share one), then
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

import json
from collections.abc import AsyncIterator
from typing import Any

from oracle_core.errors import ThreadBusyError
from oracle_core.run.deps import RunDeps
from oracle_core.run.loop import Run, new_run_id, requested, waiting_status
from oracle_core.run.opening import unanswered_calls
from oracle_core.values.events import Event, OperationUpdated, ToolResultEvent
from oracle_core.values.messages import ToolCall, ToolResult
from oracle_core.values.operations import RUNNABLE_STATUSES, Operation
from oracle_core.values.threads import RunRecord

INTERRUPTED_CALL = (
    "the approved call was interrupted (the process running it stopped); it may or may not "
    "have taken effect, and it was not run again"
)


class NotClaimedError(ThreadBusyError):
    """Another caller carries this operation on (or already did); this one stops untouched."""


def declined(operation: Operation) -> str:
    """The tool message content of a denied (or cancelled) call."""
    if operation.status == "cancelled":
        text = "A person cancelled this call; it did not run."
    else:
        text = "A person declined this call; it did not run."
    if operation.reason:
        text += f" Reason: {operation.reason}"
    return json.dumps({"error": text}, ensure_ascii=False)


class ResumedRun(Run):
    """The waiting run of ``operation``, carried on once its wait is settled.

    Args:
        deps: what runs use.
        operation: the settled operation (any status but open).
        stream: yield the model's text as it arrives.
    """

    def __init__(self, deps: RunDeps, operation: Operation, *, stream: bool = True) -> None:
        super().__init__(deps, operation.thread_id, "", user_id=operation.user_id, stream=stream)
        self.operation = operation
        self.record = RunRecord(id=operation.run_id, thread_id=operation.thread_id)
        self.owner = f"{operation.run_id}:{new_run_id()}"  # unique per resume attempt
        self.claimed: Operation | None = None
        self.not_claimed = False  # another caller carries it on (or did): nothing was touched

    async def _open(self) -> None:
        store = self.deps.store
        state = await store.load(self.thread_id)
        self.messages, self.tokens = list(state.messages), list(state.message_tokens)
        self.message_tokens = sum(self.tokens)
        self.loaded = list(state.loaded_plugins)
        saved = next((r for r in state.runs if r.id == self.operation.run_id), None)
        if saved is not None:
            self.record = saved
        self.operations = True
        self.claimed = await store.claim_operation(self.operation.id, self.owner)
        if self.claimed is None:
            self.not_claimed = True
            raise NotClaimedError(
                f"operation {self.operation.id} is carried on by another caller, or was already"
            )
        self.operation = self.claimed
        self.record.status, self.record.error = "running", None

    async def _steps(self) -> AsyncIterator[Event]:
        try:
            async for event in self._resumed_steps():
                yield event
        except Exception as error:
            await self._finish("failed", str(error))
            raise
        await self._finish(self.record.status, self.record.error)

    async def _finish(self, status: str, error: str | None) -> None:
        outcome: dict[str, Any] = {
            "run_id": self.record.id,
            "thread_id": self.thread_id,
            "status": status,
            "answer": self.answer,
            "error": error,
            "usage": self.record.usage.as_dict(),
            "operations": [o.to_json() for o in self.waiting],
        }
        await self.deps.store.finish_operation(self.operation.id, self.owner, outcome)

    async def _resumed_steps(self) -> AsyncIterator[Event]:
        operation = self.operation
        unanswered = unanswered_calls(self.messages)
        if operation.call_id in unanswered:
            result = await self._answer(operation)
            if result.operation is not None and result.operation.status == "pending":
                # The approved call now waits for something else (a connection).
                async for event in self._finish_step([result]):
                    yield event
                return
            await self._save([result.message()], result.loaded)
            yield ToolResultEvent(
                result.call_id, result.name, result.content, result.is_error, result.refused
            )
            if result.operation is not None:
                yield OperationUpdated(result.operation.to_json())
        yield OperationUpdated(operation.to_json())
        if operation.status == "cancelled":
            self.record.status = "cancelled"
            await self._save([])
            return
        others = await self._still_waiting(unanswered)
        if others:
            self.waiting = others
            self.record.status = waiting_status(others)
            await self._save([])
            for other in others:
                yield requested(other)
            return
        filled = self._interrupted_results()  # calls of the response that hold no operation
        if filled:
            await self._save(filled)
        async for event in super()._steps():
            yield event

    async def _still_waiting(self, unanswered: list[str]) -> list[Operation]:
        """The other operations of this run whose calls still wait (open ones only)."""
        pending = set(unanswered) - {self.operation.call_id}
        if not pending:
            return []
        found = await self.deps.store.list_operations(thread_id=self.thread_id)
        mine = [o for o in found if o.run_id == self.record.id and o.call_id in pending]
        return [o for o in mine if o.kind != "background" and o.resumed_at is None]

    async def _answer(self, operation: Operation) -> ToolResult:
        """The tool result that answers the waiting call."""
        if operation.status not in RUNNABLE_STATUSES:
            return ToolResult(operation.call_id, operation.tool, declined(operation), is_error=True)
        if operation.claims > 1:
            content = json.dumps({"error": INTERRUPTED_CALL})
            return ToolResult(operation.call_id, operation.tool, content, is_error=True)
        call = ToolCall(
            id=operation.call_id,
            name=operation.tool,
            arguments=operation.arguments,  # the saved call: never the thread's copy
            thread_id=self.thread_id,
            run_id=self.record.id,
            loaded=tuple(self.loaded),
            user_id=operation.user_id,
        )
        satisfied = frozenset(operation.details.get("satisfied") or ()) | {operation.kind}
        # A connection is asked again: that check puts the credentials in the call's context,
        # and a second missing one (or one deleted meanwhile) must wait again, not fail.
        satisfied -= {"connection"}
        result = await self.deps.executor.execute(
            call,
            list(self.loaded),
            self.deps.middleware.notify,
            satisfied=satisfied,
            digest=operation.digest,
        )
        return result if result.call_id == call.id else result.replace(call_id=call.id)
