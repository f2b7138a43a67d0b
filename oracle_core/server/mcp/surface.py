"""One thread's model-facing surface, for a client that is not a model: what the gate shows,
and calls that pass through the gate exactly as a model's do.

The tool list is the one the oracle would send the model on this thread's next call
(:meth:`~oracle_core.capabilities.gate.Gate.tools`: the meta-tools, ``get_operation`` once
the thread has an operation, and the tools the capability gate shows for the thread's loaded
plugins). A call is checked against that list by the gate before any middleware sees it, and
again after a middleware changed it, as in a run; an allowed call runs through the
middleware chain and the tool executor, as in a run. A ``load_capability`` call is saved to
the thread like a model's. A call that must wait comes back with its pending operation
(:mod:`oracle_core.server.mcp.waits` records and settles it).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.run.executor import error_result
from oracle_core.run.gated import GatedCalls
from oracle_core.run.saving import cleaned
from oracle_core.run.state import new_run_id
from oracle_core.store.facets import facet_of
from oracle_core.values.messages import ToolCall, ToolResult

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle
    from oracle_core.plugins.registry import Registry
    from oracle_core.run.deps import RunDeps


@dataclass(frozen=True)
class Called:
    """One call a client made through the surface, and how it was answered.

    Attributes:
        call: the call as the executor got it (its id, arguments text and run id).
        result: its result; ``result.operation`` is a ``pending`` wait when it must wait.
    """

    call: ToolCall
    result: ToolResult

    @property
    def waiting(self) -> bool:
        """Whether the call did not run because it waits for a person."""
        operation = self.result.operation
        return operation is not None and operation.status == "pending"


@dataclass(frozen=True)
class ThreadView:
    """What the gate shows of the plugins on one thread now, for what is not a tool.

    A plugin's prompts and resources follow its tools' rule: an ``always`` or ``silent``
    plugin's are shown at once, an ``on-demand`` plugin's once the thread loaded it; a
    specialist surface shows none.

    Attributes:
        registry: the oracle's plugins now.
        loaded: the thread's loaded plugins, in load order.
        specialist: the oracle serves a specialist surface.
    """

    registry: Registry
    loaded: tuple[str, ...]
    specialist: bool

    def shows(self, plugin: str) -> bool:
        """Whether the thread is shown what ``plugin`` offers besides tools."""
        found = self.registry.get(plugin)
        if found is None or self.specialist:
            return False
        return found.visibility != "on-demand" or plugin in self.loaded

    def loadable(self, plugin: str) -> bool:
        """Whether loading ``plugin`` would show its items (an on-demand plugin not loaded)."""
        found = self.registry.get(plugin)
        return (
            found is not None
            and not self.specialist
            and found.visibility == "on-demand"
            and plugin not in self.loaded
        )


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
        operations = await self._has_operations(deps)
        return deps.gate.tools(state.loaded_plugins, operations=operations)

    async def view(self) -> ThreadView:
        """The plugins the gate shows on this thread now (for prompts and resources)."""
        deps = await self.oracle.run_deps()
        state = await deps.store.load(self.thread_id)
        gate = deps.gate
        return ThreadView(deps.registry, tuple(state.loaded_plugins), gate.specialist is not None)

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> Called:
        """Run one call the way the run loop runs a model's, the gate first.

        Returns:
            The call and its result (``refused`` when the gate did not let it run,
            ``loaded`` with the plugins a ``load_capability`` call loaded, which are saved
            to the thread, ``operation`` pending when it must wait: then it did not run).
        """
        deps = await self.oracle.run_deps()
        state = await deps.store.load(self.thread_id)
        gate = deps.gate
        capabilities = deps.capabilities.state(state.loaded_plugins)
        operations = await self._has_operations(deps)
        gated = GatedCalls(
            deps.executor,
            deps.middleware,
            gate.shown(gate.names(capabilities.loaded, operations=operations)),
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
            # A call that waits becomes a run of its own, under this id (see waits.py).
            run_id=new_run_id(),
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
        return Called(call, result)

    async def _has_operations(self, deps: RunDeps) -> bool:
        """Whether the thread has an operation (``get_operation`` is shown then, as in a run)."""
        operations = facet_of(deps.store, "operations")
        if operations is None:  # a store without operations: no thread has one
            return False
        return bool(await operations.list_operations(thread_id=self.thread_id, limit=1))
