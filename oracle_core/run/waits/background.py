"""Background tool calls: the work goes on in this process after the call has answered.

A call of a ``@tool(background=True)`` tool that passed the gate, validation and every
wait check is saved as a ``background`` operation (status ``running``) and answers the
model at once with the operation's id. The work runs as an asyncio task of this process
(an async tool), or on the oracle's sync-tool pool (a sync tool, which sees
``ToolContext.cancellation`` set when it is cancelled). While it works, the task holds the
lease ``operation_lease(id)``, so a store can tell that a process died with it.

When the work ends its result (or error) is saved in the operation by compare-and-set: a
cancelled operation stays cancelled. The result reaches the thread as a message the next
run sees: when a run opens on the thread, every finished background operation not yet
handed over becomes a ``get_operation`` call and its answer in the thread, just before the
user's message (:func:`deliveries`), exactly as if the model had asked. One the model
already read with ``get_operation`` is not handed over again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from oracle_core.capabilities.meta_tools.results import echo
from oracle_core.errors import OperationNotFoundError, ToolError
from oracle_core.plugins.core_tools import GET_OPERATION
from oracle_core.run.calls import PreparedCall
from oracle_core.run.lease import ThreadLease
from oracle_core.run.pool import SyncToolPool
from oracle_core.store.base import Checkpointer
from oracle_core.values.limits import RunLimits
from oracle_core.values.messages import Message, ToolCall, ToolResult, content_of
from oracle_core.values.operations import Operation, operation_lease
from oracle_core.values.tool_errors import error_result

log = logging.getLogger("oracle_core.run")

MAX_ID_CHARS = 64
"""Characters of an operation id ``get_operation`` reads; a longer id is simply not found."""

NO_TIMEOUT = 7 * 24 * 3600.0
"""Seconds a background call without its own ``timeout`` may take (a week)."""

CLOSED_ERROR = "the oracle closed before the background call finished"


def model_view(operation: Operation) -> dict[str, Any]:
    """What ``get_operation`` shows the model of an operation (nothing about other threads)."""
    view: dict[str, Any] = {
        "id": operation.id,
        "kind": operation.kind,
        "status": operation.status,
        "tool": operation.tool,
    }
    for key in ("result", "error", "reason"):
        value = getattr(operation, key)
        if value is not None:
            view[key] = value
    return view


def _content(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _error(call: ToolCall, message: str) -> ToolResult:
    return error_result(call, message)


class BackgroundWork:
    """The background calls of one oracle, and the ``get_operation`` meta-tool.

    Args:
        store: where operations are saved.
        pool: the oracle's sync-tool pool.
        limits: the run limits (lease ttl, result cap).
        clock: wall-clock time for ``created_at`` / ``updated_at``.
    """

    def __init__(
        self,
        store: Checkpointer,
        pool: SyncToolPool,
        limits: RunLimits,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.pool = pool
        self.limits = limits
        self.clock = clock
        self._tasks: dict[str, tuple[asyncio.Task[None], PreparedCall]] = {}

    @property
    def running(self) -> list[str]:
        """Ids of the background operations working in this process now."""
        return list(self._tasks)

    async def start(
        self, prepared: PreparedCall, seconds: float | None, cap: Callable[[str], str]
    ) -> ToolResult:
        """Save ``prepared`` as a running background operation, start it, answer at once.

        Args:
            prepared: the call, validated and past every wait check.
            seconds: how long the work may take (``None``: :data:`NO_TIMEOUT`).
            cap: cuts a result to the oracle's result limit.
        """
        operation = prepared.operation("background", "running", self.clock())
        lease = ThreadLease(
            self.store,
            operation_lease(operation.id),
            operation.id,
            ttl=self.limits.lease_ttl,
            wait=0.0,
        )
        await lease.__aenter__()  # held before the operation exists: never seen as lost
        try:
            await self.store.insert_operation(operation)
        except BaseException:
            await lease.__aexit__(None, None, None)
            raise
        task = asyncio.create_task(
            self._work(operation, prepared, seconds or NO_TIMEOUT, cap, lease),
            name=f"background {operation.id}",
        )
        self._tasks[operation.id] = (task, prepared)
        content = _content(
            {
                "operation": operation.id,
                "status": "running",
                "note": f'The work goes on; call {GET_OPERATION}({{"id": "{operation.id}"}}) '
                "to see how it stands.",
            }
        )
        return ToolResult(prepared.call.id, prepared.call.name, content, operation=operation)

    async def _work(
        self,
        operation: Operation,
        prepared: PreparedCall,
        seconds: float,
        cap: Callable[[str], str],
        lease: ThreadLease,
    ) -> None:
        tool, context = prepared.bound.tool, prepared.context
        kwargs = dict(prepared.arguments)
        if tool.context_parameter is not None:
            kwargs[tool.context_parameter] = context
        function = functools.partial(tool.function, **kwargs)
        watcher = asyncio.create_task(self._watch(operation.id, asyncio.current_task()))
        status, result, error = "failed", None, None
        try:
            if tool.is_async:
                value = await asyncio.wait_for(function(), seconds)
            else:
                value = await self.pool.run(
                    function, seconds, context.cancellation, prepared.bound.plugin.name
                )
            status, result = "completed", cap(content_of(value))
        except asyncio.CancelledError:
            context.cancellation.set()
            status, error = "cancelled", "cancelled"
        except TimeoutError:
            context.cancellation.set()
            error = f"{operation.tool} timed out after {seconds:g} s"
        except ToolError as raised:
            error = str(raised)
        except Exception as raised:
            log.exception("background call %s of %s raised", operation.id, operation.tool)
            error = f"{operation.tool} failed: {type(raised).__name__}: {raised}"
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        try:
            if status != "cancelled":  # a cancel already set its status
                await self.store.update_operation(
                    operation.id, expect={"running"}, status=status, result=result, error=error
                )
        except OperationNotFoundError:  # its thread was deleted meanwhile: nobody to tell
            pass
        except Exception:
            log.exception("the outcome of background call %s could not be saved", operation.id)
        finally:
            self._tasks.pop(operation.id, None)
            await lease.__aexit__(None, None, None)

    async def _watch(self, operation_id: str, task: asyncio.Task[Any] | None) -> None:
        """Cancel the work when another process cancelled its operation in the store."""
        pause = min(1.0, self.limits.lease_ttl / 3)
        while task is not None:
            await asyncio.sleep(pause)
            try:
                current = await self.store.get_operation(operation_id)
            except Exception:
                continue
            if current is not None and current.status == "cancelled":
                task.cancel()
                return

    async def wait(self, operation_id: str) -> None:
        """Wait until the background call ``operation_id`` of this process has ended."""
        local = self._tasks.get(operation_id)
        if local is not None:
            await asyncio.wait({local[0]})

    async def cancel(self, operation_id: str, reason: str = "cancelled") -> Operation:
        """Cancel a background operation: its status first, then its work in this process.

        Raises:
            OperationNotFoundError: when there is no such operation.
        """
        operation, changed = await self.store.update_operation(
            operation_id, expect={"running"}, status="cancelled", error=reason
        )
        local = self._tasks.get(operation.id)
        if changed and local is not None:
            task, prepared = local
            prepared.context.cancellation.set()  # a sync tool stops at its next check
            task.cancel()
        return operation

    async def close(self) -> None:
        """Stop every background call of this process; each counts as failed."""
        for operation_id, (task, prepared) in list(self._tasks.items()):
            prepared.context.cancellation.set()
            with contextlib.suppress(Exception):
                await self.store.update_operation(
                    operation_id, expect={"running"}, status="failed", error=CLOSED_ERROR
                )
            task.cancel()
        for task, _ in list(self._tasks.values()):
            with contextlib.suppress(BaseException):
                await task

    async def get_operation(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """The ``get_operation`` meta-tool: inspect or cancel an operation of the call's thread.

        An id of another thread gets exactly the answer of an unknown id.
        """
        identifier, cancel = arguments.get("id"), arguments.get("cancel", False)
        if not isinstance(identifier, str) or not isinstance(cancel, bool):
            message = f'{GET_OPERATION} takes {{"id": "<operation id>", "cancel": false}}'
            return _error(call, message)
        found = None
        if len(identifier) <= MAX_ID_CHARS:
            found = await self.store.get_operation(identifier)
        not_found = f"operation {echo(identifier)} was not found on this thread"
        if found is None or found.thread_id != call.thread_id:
            return _error(call, not_found)
        if cancel:
            if found.kind != "background":
                return _error(
                    call, f"operation {found.id} is an {found.kind}: only a person can settle it"
                )
            try:
                found = await self.cancel(found.id, "cancelled by the model")
            except OperationNotFoundError:  # deleted meanwhile
                return _error(call, not_found)
        if found.kind == "background" and not found.open:
            # The model has read the outcome: the next run need not hand it over again.
            claimed = await self.store.claim_operation(found.id, call.run_id)
            if claimed is not None:
                await self.store.finish_operation(found.id, call.run_id, {"delivered": "model"})
        return ToolResult(call.id, call.name, _content(model_view(found)))


def deliveries(operations: Sequence[Operation], run_id: str) -> list[Operation]:
    """The finished background operations of a thread not yet handed to it (claim them next)."""
    return [
        o
        for o in operations
        if o.kind == "background" and not o.open and o.resumed_at is None and o.run_id != run_id
    ]


def delivery_messages(operation: Operation) -> list[Message]:
    """A finished background operation as a ``get_operation`` call and its answer."""
    call_id = f"call_{operation.id}"
    arguments = json.dumps({"id": operation.id})
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": GET_OPERATION, "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": _content(model_view(operation))},
    ]
