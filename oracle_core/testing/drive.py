"""Driving an oracle from a test: run one turn, or call one tool as the model would."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from oracle_core.oracle import Oracle
from oracle_core.plugins.core_tools import META_TOOL_NAMES
from oracle_core.run.loop import new_run_id
from oracle_core.values.messages import ToolCall, ToolResult
from oracle_core.values.result import RunResult

DEFAULT_THREAD = "test-thread"
"""The thread :func:`run_turn` and :func:`call_tool` use unless told otherwise."""


async def run_turn(
    oracle: Oracle,
    message: str,
    *,
    thread: str = DEFAULT_THREAD,
    user_id: str = "default",
    expect: str | None = "completed",
) -> RunResult:
    """Run one user ``message`` on ``thread`` to its answer, as a user of the oracle would.

    Args:
        oracle: the oracle, e.g. from the ``oracle_factory`` fixture.
        message: what the user says.
        thread: the conversation thread; turns on one thread share its history and loads.
        user_id: who the run acts for.
        expect: the status the run must end with; ``None`` accepts any.

    Returns:
        The whole run: ``answer``, ``status``, ``tool_calls``, ``loaded``, ``events``.

    Raises:
        AssertionError: when the run ends with another status, quoting the run's error
            (a model call with no scripted reply, a plugin's middleware raising, ...).
    """
    __tracebackhide__ = True
    result = await oracle.run(thread, message, user_id=user_id)
    if expect is not None and result.status != expect:
        why = f": {result.error}" if result.error else ""
        raise AssertionError(
            f"the run on thread {thread!r} ended {result.status!r}, not {expect!r}{why}"
        )
    return result


async def call_tool(
    oracle: Oracle,
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    thread: str = DEFAULT_THREAD,
    user_id: str = "default",
) -> Any:
    """Call tool ``name`` with ``arguments`` the way the runtime runs a model's call.

    The call goes through the same tool executor and middleware as a run's: the arguments
    (a dict, or the JSON text a model would write) are validated against the tool's schema,
    the tool gets the same :class:`~oracle_core.ToolContext` (thread, plugin config, user,
    oracle), timeout and result cap, plugin middleware sees the call, and the oracle's
    ``oracle_startup`` hooks have run. Only the capability gate is not consulted: the tool
    is called whether or not its plugin is loaded in ``thread``.

    The meta-tools work too: ``list_capabilities`` and ``load_capability`` return their
    JSON result decoded, and a load is saved to ``thread`` like a model's load.

    Returns:
        What the tool returned (not yet turned into the text the model reads).

    Raises:
        LookupError: when the oracle has no such tool, naming the tools it has.
        ToolArgumentsError: when the arguments do not fit the tool's schema.
        Exception: whatever the tool raised (a timeout as ``TimeoutError``).
    """
    if name not in META_TOOL_NAMES and name not in oracle.registry.tools:
        known = ", ".join(oracle.registry.tools) or "none"
        raise LookupError(f"the oracle has no tool {name!r}; its plugin tools: {known}")
    text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments or {}))
    deps = await oracle.run_deps()
    thread_state = await deps.store.load(thread)
    capabilities = deps.capabilities.state(thread_state.loaded_plugins)
    call = ToolCall(
        id=f"call_{uuid.uuid4().hex[:12]}",
        name=name,
        arguments=text,
        thread_id=thread,
        run_id=new_run_id(),
        loaded=capabilities.loaded,
        user_id=user_id,
    )

    async def execute(changed: ToolCall) -> ToolResult:
        return await deps.executor.execute(changed, capabilities, deps.middleware.notify)

    result = await deps.middleware.run_tool(call, deps.middleware.wrap_tool(execute))
    if capabilities.new:
        await deps.store.append(thread, base=len(thread_state.messages), loaded=capabilities.new)
    if result.error is not None:
        raise result.error
    if name in META_TOOL_NAMES:
        return json.loads(result.content)
    return result.value
