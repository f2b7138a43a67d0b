"""Tool calls under the gate: through the middleware, checked before and after them.

The run loop (for each call of a model response) and the MCP export (for each call a client
makes) run calls the same way: the gate decides on the call as made, before any middleware
sees it; a call a middleware changed is decided again, on a private copy that is then the
one that runs; and what comes back keeps only what the core made (:meth:`GatedCalls.answer`).
The guarded core is checked for patches before the gate decides on a call and after the
call returns (:func:`~oracle_core.plugins.patch_guard.check_core`): a change is undone,
and one a tool call made fails that call, naming its plugin.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Collection
from typing import Any

from oracle_core.capabilities.gate import Shown, private_call
from oracle_core.capabilities.state import CapabilityState
from oracle_core.plugins.patch_guard import check_core
from oracle_core.run.chain import MiddlewareChain
from oracle_core.run.executor import ToolExecutor, error_result
from oracle_core.values.messages import ToolCall, ToolResult
from oracle_core.values.operations import OFFERED, Operation

log = logging.getLogger("oracle_core.run")


class GatedCalls:
    """Runs tool calls that answer one request, under the gate that request set.

    Args:
        executor: runs the calls the gate allows.
        chain: the plugins' middleware.
        allowed: what the request showed (:meth:`~oracle_core.capabilities.gate.Gate.shown`).
        capabilities: the run's capability state (loads change it).
        concurrency: how many calls may run at once (``None``: no bound).
    """

    def __init__(
        self,
        executor: ToolExecutor,
        chain: MiddlewareChain,
        allowed: Shown,
        capabilities: CapabilityState,
        concurrency: int | None = None,
    ) -> None:
        self.executor = executor
        self.chain = chain
        self.allowed = allowed
        self.capabilities = capabilities
        self._semaphore = asyncio.Semaphore(concurrency) if concurrency else None
        self._handler = chain.wrap_tool(self._execute)
        # The operations the executor made for calls the gate allowed, by the id of the
        # object handed to the middleware (kept alive, so no other object takes its id),
        # each with a private copy taken then: what is saved is the copy, whatever a
        # middleware did to the object it saw.
        self._minted: dict[int, tuple[Operation, Operation]] = {}

    def refusal(self, call: ToolCall) -> ToolResult | None:
        """The gate's refusal of ``call`` (``None``: it may run)."""
        return self.allowed.check(call, self.capabilities.loaded)

    async def run(self, call: ToolCall) -> ToolResult:
        """``call`` through the middleware; decided before any middleware sees it.

        A refused call stays refused whatever ``before_tool_call`` does; raises what a
        middleware raised. Pass the result to :meth:`answer`.
        """
        core = self.executor.registry.core
        if core is not None:
            check_core(core)  # a thread may have patched the gate since the last check
        first = self.refusal(call)
        return await self.chain.run_tool(
            call, self._handler, lambda seen: first or self.refusal(seen)
        )

    async def _execute(self, call: ToolCall) -> ToolResult:
        # Asked again: a middleware may have changed the call in wrap_tool_call. Checked and
        # run as one private copy: a middleware may still hold the call it passed on.
        checked = private_call(call)
        refusal = self.refusal(checked)
        if refusal is not None:
            return refusal
        bound = self._semaphore if self._semaphore is not None else contextlib.nullcontext()
        async with bound:
            result = await self.executor.execute(checked, self.capabilities, self.chain.notify)
        core = self.executor.registry.core
        if core is not None:
            tool = self.executor.registry.tools.get(checked.name)
            plugin = tool.plugin.name if tool is not None else None
            changed = check_core(core, plugin=plugin)
            if changed:
                return error_result(
                    checked,
                    f"the tool changed oracle-core ({', '.join(changed[:5])}): the change was "
                    "undone and this call's result dropped",
                )
        operation = result.operation
        if operation is not None:
            if operation.status == "pending":  # a wait: it records what the request offered
                operation = offered_by(operation, self.allowed.names)
                result = result.replace(operation=operation)
            self._minted[id(operation)] = (operation, _copy(operation))
        return result

    def answer(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """``result`` as the answer to ``call``, keeping only what the core made.

        The tool message answers the call as made, whatever a middleware renamed. A
        middleware may deny or replace a result, never mint a wait: an operation that the
        executor did not make for a call the gate allowed is dropped, and the call fails.
        What a result says it loaded is never read (the capability state is).
        """
        operation = result.operation
        # Each wait answers one call: taken out once, so a second result carrying the same
        # operation (another call's, handed back by a middleware) counts as made up.
        minted = self._minted.pop(id(operation), None) if operation is not None else None
        if operation is not None and (minted is None or minted[0] is not operation):
            log.error(
                "tool call %s of run %s: a middleware returned an operation the oracle did not "
                "make; it was dropped and the call failed",
                call.name,
                call.run_id,
            )
            return error_result(call, "the call failed inside the oracle")
        changes: dict[str, Any] = {}
        if result.call_id != call.id:
            changes["call_id"] = call.id
        if minted is not None:  # the wait answers the call, as its message does
            changes["operation"] = minted[1].replace(call_id=call.id)
        return result.replace(**changes) if changes else result


def _copy(operation: Operation) -> Operation:
    """A deep copy of ``operation`` (its ``details`` and ``outcome`` too) that no one else holds."""
    return copy.deepcopy(operation)


def offered_by(operation: Operation, names: Collection[str]) -> Operation:
    """``operation`` recording that its request offered the tools ``names``."""
    return operation.replace(details={**operation.details, OFFERED: sorted(names)})
