"""What every step of a run does with what it made: save it, and let calls wait.

Shared by the loop's model steps and a resumed run's first step (answering the call that
waited), so both save, count and turn waiting calls into operations the same way.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from oracle_core.models.wire import read_calls, tool_answer, tool_message
from oracle_core.run.deps import RunDeps
from oracle_core.run.opening import unanswered_calls
from oracle_core.run.state import RunState
from oracle_core.values.events import (
    ApprovalRequested,
    CapabilityLoaded,
    ConnectionRequested,
    Event,
    OperationUpdated,
    ToolResultEvent,
)
from oracle_core.values.messages import Message, ToolResult
from oracle_core.values.operations import Operation
from oracle_core.values.text import clean_json, clean_text
from oracle_core.values.threads import RunStatus
from oracle_core.values.tokens import count_message_tokens
from oracle_core.values.tool_errors import error_content


async def save(
    deps: RunDeps,
    state: RunState,
    messages: list[Message],
    loaded: tuple[str, ...] | list[str] = (),
) -> None:
    """Append ``messages`` (and loads) to the thread with the run's record, under its lease,
    with the usage-ledger rows the run noted since its last step, in one transaction.

    ``loaded`` is checked against the registry and its tiers first, wherever it came from:
    only on-demand plugins are ever saved as loaded.
    """
    messages = [clean_json(m) for m in messages]  # what is saved is what is sent
    loaded = deps.executor.registry.loadable(loaded)
    tokens = await _count(messages)
    usage, state.pending_usage = state.pending_usage, []  # the ledger rows go with the step
    state.record.updated_at = time.time()  # when it last saved: what a sweep's age reads
    state.loaded = await deps.store.append(
        state.thread_id,
        base=len(state.messages),
        messages=messages,
        loaded=loaded,
        run=state.record,
        lease=state.owner,
        tokens=tokens,
        usage=usage,
    )
    state.messages.extend(messages)
    state.tokens.extend(tokens)
    state.message_tokens += sum(tokens)


async def finish_step(
    deps: RunDeps,
    state: RunState,
    results: list[ToolResult],
    loads: Sequence[str] | None = None,
) -> AsyncIterator[Event]:
    """Save a step's tool results and loads; calls that must wait become operations.

    ``loads``: the plugins the step loaded, as the run's capability state recorded them
    (whatever a middleware did to the results); without it, those the results name.

    The waits are saved first, then the other results with the run's waiting status in
    one step: a crash in between leaves a pending operation whose call is unanswered,
    which a decision resumes, and never a call that runs without one.
    """
    store = deps.store
    results = [cleaned(r) for r in results]
    waits = [r.operation for r in results if r.operation and r.operation.status == "pending"]
    done = [r for r in results if r.operation is None or r.operation.status != "pending"]
    for operation in waits:
        await store.insert_operation(operation)
    if waits:
        state.record.status = waiting_status(waits)
        state.waiting = list(waits)
    loads = list(loads) if loads is not None else [name for r in done for name in r.loaded]
    await save(deps, state, [tool_message(r) for r in done], loads)
    for result in done:
        yield ToolResultEvent(
            result.call_id, result.name, result.content, result.is_error, result.refused
        )
        if result.operation is not None:  # a background call started
            state.operations = True
            yield OperationUpdated(result.operation.to_json())
    if loads:
        yield CapabilityLoaded(loads)
    for operation in waits:
        state.operations = True
        yield requested(operation)


def cleaned(result: ToolResult) -> ToolResult:
    """``result`` with valid text: what a tool or a middleware returned may hold lone
    surrogates, and its message and its event are both built from this."""
    content = clean_text(result.content)
    return result if content is result.content else result.replace(content=content)


def interrupted_results(
    messages: Sequence[Message], reason: str = "the run that asked for it was interrupted"
) -> list[Message]:
    """Tool results for calls a crashed (or stopped) run left unanswered, so the thread
    stays valid; each says it was not run and why (``reason``)."""
    error = error_content(f"not run: {reason}")
    return [tool_answer(call_id, error) for call_id in unanswered_calls(messages)]


def waiting_status(operations: Sequence[Operation]) -> RunStatus:
    """The status of a run that waits on ``operations`` (an approval named first)."""
    if any(o.kind == "approval" for o in operations):
        return "waiting_for_approval"
    return "waiting_for_connection"


def requested(operation: Operation) -> Event:
    """The event saying ``operation`` waits: for an approval, or for a connection."""
    kind = ApprovalRequested if operation.kind == "approval" else ConnectionRequested
    return kind(operation.to_json())


def call_name(call: Mapping[str, Any]) -> str:
    """The function name of a saved ``tool_calls`` entry (read by :mod:`oracle_core.models.wire`)."""
    return read_calls([call])[0].name


def call_arguments(call: Mapping[str, Any]) -> str:
    """The arguments of a saved ``tool_calls`` entry, as the JSON text the model sent."""
    return read_calls([call])[0].arguments


async def _count(messages: list[Message]) -> list[int]:
    """Each message's tokens; large messages are counted off the event loop."""
    size = sum(
        len(str(m.get("content") or ""))
        + sum(len(call_arguments(c)) for c in m.get("tool_calls") or [])
        for m in messages
    )
    if size < 16_384:
        return [count_message_tokens(m) for m in messages]
    return await asyncio.to_thread(lambda: [count_message_tokens(m) for m in messages])
