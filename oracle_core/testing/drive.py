"""Driving an oracle from a test: run one turn, or call one tool as the model would."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping
from typing import Any

from oracle_core.capabilities.meta_tools import (
    LIST_CAPABILITIES,
    LOAD_CAPABILITY,
    list_capabilities,
    load_capability,
)
from oracle_core.context import ToolContext
from oracle_core.oracle import Oracle
from oracle_core.run.loop import RunResult

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

    The arguments may be a dict or the JSON text a model would write. They are validated
    against the tool's schema, the tool gets the same :class:`~oracle_core.ToolContext` a run
    gives it (thread, plugin config, user, oracle) and the same timeout, and the oracle's
    ``oracle_startup`` hooks have run. The capability gate is not consulted: the tool is
    called whether or not its plugin is loaded in ``thread``.

    The meta-tools work too: ``list_capabilities`` and ``load_capability`` return their
    JSON result decoded, and a load is saved to ``thread`` like a model's load.

    Returns:
        What the tool returned (not yet turned into the text the model reads).

    Raises:
        LookupError: when the oracle has no such tool, naming the tools it has.
        ToolArgumentsError: when the arguments do not fit the tool's schema.
        Exception: whatever the tool raised.
    """
    if isinstance(arguments, str):
        decoded = json.loads(arguments) if arguments.strip() else {}
        if not isinstance(decoded, dict):
            raise TypeError(f"the arguments of {name} must be a JSON object, not {arguments!r}")
        arguments = decoded
    arguments = dict(arguments or {})
    if name in (LIST_CAPABILITIES, LOAD_CAPABILITY):
        return await _meta_tool(oracle, name, arguments, thread)
    bound = oracle.registry.tools.get(name)
    if bound is None:
        known = ", ".join(oracle.registry.tools) or "none"
        raise LookupError(f"the oracle has no tool {name!r}; its plugin tools: {known}")
    await oracle.start()
    context = ToolContext(
        thread_id=thread,
        run_id=f"run_{uuid.uuid4().hex[:16]}",
        plugin=bound.plugin.name,
        config=bound.plugin.config,
        user_id=user_id,
        oracle=oracle,
    )
    timeout = bound.tool.timeout or oracle.tool_timeout
    return await asyncio.wait_for(bound.tool.call(arguments, context), timeout)


async def _meta_tool(oracle: Oracle, name: str, arguments: dict[str, Any], thread: str) -> Any:
    state = await oracle.checkpointer.load(thread)
    if name == LIST_CAPABILITIES:
        return json.loads(list_capabilities(oracle.registry, state.loaded_plugins))
    outcome = load_capability(oracle.registry, state.loaded_plugins, arguments)
    if outcome.loaded:
        await oracle.checkpointer.append(thread, base=len(state.messages), loaded=outcome.loaded)
    return json.loads(outcome.content)
