"""One thread's model-facing surface, for a client that is not a model: what the gate shows,
and calls that pass through the gate exactly as a model's do.

The tool list is the one the oracle would send the model on this thread's next call
(:meth:`~oracle_core.capabilities.gate.Gate.tools`: the meta-tools and the tools the
capability gate shows for the thread's loaded plugins). A call is checked against that list
by the gate before any middleware sees it, and again after a middleware changed it, as in a
run; an allowed call runs through the middleware chain and the tool
executor, as in a run. A ``load_capability`` call is saved to the thread like a model's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.run.executor import error_result
from oracle_core.run.gated import GatedCalls
from oracle_core.run.saving import cleaned
from oracle_core.values.messages import ToolCall, ToolResult

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle


class ThreadSurface:
    """The gate's view of one thread, callable like a model's tool calls.

    Args:
        oracle: the oracle (started on first use).
        thread_id: the thread.
        user_id: whose calls these are (tools read it from their context).
    """

    def __init__(self, oracle: Oracle, thread_id: str, user_id: str = "default") -> None:
        self.oracle = oracle
        self.thread_id = thread_id
        self.user_id = user_id

    async def tools(self) -> tuple[Tool, ...]:
        """What the gate shows on this thread now (meta-tools first, then plugin tools)."""
        deps = await self.oracle.run_deps()
        state = await deps.store.load(self.thread_id)
        return deps.requests.gate.tools(state.loaded_plugins)

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolResult:
        """Run one call the way the run loop runs a model's, the gate first.

        Returns:
            The tool result (``refused`` when the gate did not let it run, ``loaded`` with
            the plugins a ``load_capability`` call loaded, which are saved to the thread).
        """
        deps = await self.oracle.run_deps()
        state = await deps.store.load(self.thread_id)
        gate = deps.requests.gate
        capabilities = deps.executor.capabilities.state(state.loaded_plugins)
        gated = GatedCalls(
            deps.executor,
            deps.middleware,
            gate.shown(gate.names(capabilities.loaded)),
            capabilities,
        )
        try:
            text = json.dumps(dict(arguments or {}), ensure_ascii=False)
        except (TypeError, ValueError):
            text = "{"  # the executor answers: not valid JSON
        call = ToolCall(
            id=f"call_{uuid.uuid4().hex[:12]}",
            name=name,
            arguments=text,
            thread_id=self.thread_id,
            run_id=f"mcp_{uuid.uuid4().hex[:16]}",
            loaded=capabilities.loaded,
            user_id=self.user_id,
        )
        try:
            result = await gated.run(call)
        except Exception as error:  # a middleware raised
            result = error_result(call, "the call failed inside the oracle", error)
        result = cleaned(gated.answer(call, result))  # valid text, as a run saves it
        if capabilities.new:
            await deps.store.append(
                self.thread_id, base=len(state.messages), loaded=capabilities.new
            )
        return _unwaiting(result)


def _unwaiting(result: ToolResult) -> ToolResult:
    """A call that must wait (an approval, a missing connection) as a result that says so.

    An MCP session has no run to stop and resume, so the call is not run and no operation is
    opened: the result says what it waits for and how to get past it.
    """
    operation = getattr(result, "operation", None)
    if operation is None or getattr(operation, "status", None) != "pending":
        return result
    kind = operation.kind
    if kind == "connection":
        name = operation.details.get("connection", "?")
        hint = (
            f"supply it with `oracle connections set {operation.plugin} {name}`, then call "
            "the tool again"
        )
    else:
        hint = (
            "an MCP session cannot wait for a decision: ask for it in a run of the oracle "
            "(`oracle ask`, POST /runs), where a person can approve it"
        )
    message = f"{result.name} was not run: {operation.reason}; {hint}"
    content = json.dumps({"error": message, "waiting": f"waiting_for_{kind}"}, ensure_ascii=False)
    return ToolResult(result.call_id, result.name, content, is_error=True)
