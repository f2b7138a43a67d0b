"""A call over MCP that must wait for a person: an approval, or a missing connection.

An MCP client is the model of its session, so its call waits as a model's would: the call
does not run, and it becomes a run of its own on the session's thread (the call as an
assistant message, the pending operation, the run record ``waiting_for_...``), saved by the
run loop's own steps (:func:`record`). Every decision path then finds it like any wait:

- **In the session** (an approval, when the client declared the ``elicitation`` capability):
  the server asks the person through the client (``elicitation/create`` on the handshake
  era; an ``InputRequiredResult`` the client answers by calling again, on 2026-07-28). The
  answer is recorded as :func:`oracle_core.run.waits.settle.decide` records one (a
  compare-and-set from ``pending``), and the run is carried on exactly once by the resume
  step (:class:`~oracle_core.run.waits.resume.ResumeStep`: the claim, the saved canonical
  arguments and their digest, the gate asked again). The step then ends the run instead of
  asking the oracle's model: the client, which is the model here, gets the tool's result.
- **Elsewhere** (``oracle operations approve``, ``POST /operations/{id}/decision``,
  ``oracle connections set``): the result of the call names the operation, what it waits
  for and how to settle it; settled there, the run resumes as every waiting run does (the
  call runs once, then the oracle's model answers on the thread), and ``get_operation``
  tells the client the outcome.

A connection is never asked for through the client: a credential typed into an MCP
client's form would pass through the client, and the oracle keeps secrets only in its
sealed store. A thread that already waits takes no second wait (as it takes no new
message): the call is refused, naming the operation to settle first.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from oracle_core.errors import OracleError
from oracle_core.models.base import assistant_message, tool_call
from oracle_core.run.executor import error_result
from oracle_core.run.loop import Run
from oracle_core.run.saving import finish_step, interrupted_results, save
from oracle_core.run.state import RunState
from oracle_core.run.turn import open_run
from oracle_core.run.waits import settle
from oracle_core.run.waits.opening import how_to_settle
from oracle_core.run.waits.resume import ResumeStep, resumed_state
from oracle_core.values.events import Event, RunFinished, ToolResultEvent
from oracle_core.values.messages import Message, ToolResult
from oracle_core.values.operations import Operation
from oracle_core.values.threads import RunRecord
from oracle_core.values.tool_errors import failed_call

if TYPE_CHECKING:
    from oracle_core.run.deps import RunDeps
    from oracle_core.server.mcp.surface import Called

DECISION = "decision"
"""The key of the approval question in an ``InputRequiredResult`` (2026-07-28)."""

DECIDED_IN_CLIENT = "decided in the MCP client"
"""The reason recorded with a decision a person gave through the MCP client."""

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "true runs the call once, with exactly these arguments; false denies it",
        },
        "reason": {"type": "string", "title": "Reason", "description": "Why (optional)"},
    },
    "required": ["approve"],
}
"""What the person is asked: approve (required, no default: a client must say it) and why."""

MAX_SHOWN_ARGUMENTS = 1_000
"""Characters of a call's arguments the question shows."""


class _WaitOpened:
    """The first step of the run an MCP call that must wait becomes: save the call, wait.

    It opens the thread as a new turn does (a dead run marked interrupted, finished
    background results handed over, a thread that already waits refused), saves the call
    as the assistant message a model would have sent, then saves the wait with the run
    loop's own step, which ends the run ``waiting_for_...``.
    """

    public = True  # the thread's followers see the wait, as for any run

    def __init__(self, called: Called) -> None:
        self.called = called

    async def open(self, deps: RunDeps, state: RunState) -> None:
        """Read the thread, refuse it if it waits, and save the call."""
        call = self.called.call
        message: Message = assistant_message(None, [tool_call(call.name, call.arguments, call.id)])
        state.operations = True  # the call's wait is an operation of the thread
        await open_run(
            deps,
            state,
            lambda found: [*interrupted_results(state.messages), *found.messages(), message],
        )

    async def answer(self, deps: RunDeps, state: RunState) -> AsyncIterator[Event]:
        """Save the wait: the run ends waiting for it."""
        async for event in finish_step(deps, state, [self.called.result]):
            yield event

    async def close(self, deps: RunDeps, state: RunState, failure: str | None) -> None:
        """Nothing to close: the run's record says how it ended."""


class _AnswerOnly(ResumeStep):
    """The resume step for a wait decided in the MCP session: answer the call, then end.

    Everything of :class:`ResumeStep` holds (the claim, the saved arguments and digest, the
    gate asked again); only the model is not asked afterwards, since the MCP client that
    made the call is the model of this thread and gets the answer itself.
    """

    async def answer(self, deps: RunDeps, state: RunState) -> AsyncIterator[Event]:
        """The resume step's answer; a run that would go on to the model completes."""
        async for event in super().answer(deps, state):
            yield event
        if state.running:
            state.record.status = "completed"
            await save(deps, state, [])


async def record(deps: RunDeps, called: Called) -> Operation | ToolResult:
    """Save a call that must wait as a waiting run of its own on its thread.

    Returns:
        The saved operation, or the call's error result when it could not be saved (the
        thread already waits for another operation, or the store failed): nothing ran.
    """
    call = called.call
    state = RunState(
        RunRecord(id=call.run_id, thread_id=call.thread_id),
        call.run_id,
        user_id=call.user_id,
        stream=False,
    )
    async for _ in Run(deps, state, _WaitOpened(called)).events():
        pass
    if state.waiting:
        return state.waiting[0]
    reason = state.record.error or "the wait could not be saved"
    return error_result(call, f"{call.name} was not run: {reason}")


def can_ask(capabilities: Any) -> bool:
    """Whether a client with these capabilities answers form elicitations.

    A bare ``elicitation: {}`` (the shape before modes existed) counts as form support.
    """
    elicitation = getattr(capabilities, "elicitation", None)
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


def question(operation: Operation) -> str:
    """What the person is asked about an approval: the call, its arguments, and why."""
    arguments = operation.arguments
    if len(arguments) > MAX_SHOWN_ARGUMENTS:
        arguments = arguments[:MAX_SHOWN_ARGUMENTS] + "…"
    return (
        f"Approve the call {operation.plugin}.{operation.tool}({arguments})? "
        f"{operation.reason or 'It needs a person to approve it.'} "
        f"(operation {operation.id})"
    )


def decision(answer: Any) -> tuple[bool, str | None] | None:
    """The person's decision in an elicitation answer: (approve, reason), or ``None`` when
    none was given (dismissed, or an answer that says nothing), which leaves the wait open."""
    action = getattr(answer, "action", None)
    if action == "decline":
        return False, DECIDED_IN_CLIENT
    if action != "accept":
        return None
    content = getattr(answer, "content", None) or {}
    approve = content.get("approve")
    if not isinstance(approve, bool):
        return None
    reason = content.get("reason")
    said = reason.strip()[:2000] if isinstance(reason, str) and reason.strip() else None
    return approve, f"{said} ({DECIDED_IN_CLIENT})" if said else DECIDED_IN_CLIENT


async def decide(deps: RunDeps, operation_id: str, approve: bool, reason: str | None) -> ToolResult:
    """Record a person's decision on an approval (once) and carry its run on (once).

    The decision is recorded as :func:`~oracle_core.run.waits.settle.decide` records one;
    the run is carried on by :class:`_AnswerOnly`, which answers the call and ends.

    Returns:
        The call's result: the tool's own result when it ran, the denial when denied, or an
        error saying why it was neither (settled otherwise first, its tool gone).
    """
    try:
        operation = await settle.get(deps, operation_id)
        wanted = "approved" if approve else "denied"
        if approve and operation.status in ("pending", "approved"):
            settle.check_tool(deps, operation)
        operation, _ = await deps.store.update_operation(
            operation.id, expect={"pending"}, status=wanted, reason=reason
        )
    except OracleError as error:  # typed: its message says what to do
        return _failed(operation_id, str(error))
    if operation.status != wanted:
        answer = await _answer_on_thread(deps, operation)
        if answer is not None:
            return answer
        return _failed(
            operation.id,
            f"operation {operation.id} was already settled as {operation.status} "
            f"({operation.reason or 'elsewhere'}); it cannot be {wanted} now",
            operation,
        )
    return await carry_on(deps, operation)


async def unanswered(deps: RunDeps, operation: Operation) -> ToolResult:
    """The result for a call whose person gave no decision through the client.

    Still pending: the call waits, and the result says how to settle it elsewhere. Settled
    meanwhile (by a person elsewhere): its run is carried on if no one did yet, and the
    call's answer comes back.
    """
    current = await settle.get(deps, operation.id)
    if current.status == "pending":
        return waiting_result(current)
    if not current.open and current.resumed_at is None:
        return await carry_on(deps, current)
    answer = await _answer_on_thread(deps, current)
    if answer is not None:
        return answer
    return _failed(current.id, f"operation {current.id} is {current.status}", current)


async def carry_on(deps: RunDeps, operation: Operation) -> ToolResult:
    """Carry a settled wait's run on once, and return the answer to its call."""
    step = _AnswerOnly(operation)
    events = [event async for event in Run(deps, resumed_state(operation), step).events()]
    for event in events:
        if isinstance(event, ToolResultEvent) and event.id == operation.call_id:
            return ToolResult(event.id, event.name, event.content, is_error=event.is_error)
    answer = await _answer_on_thread(deps, operation)  # carried on by another caller
    if answer is not None:
        return answer
    waiting = await _waits_again(deps, operation) if step.claimed is not None else None
    if waiting is not None:
        return waiting
    finished = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    why = f" ({finished.error})" if finished is not None and finished.error else ""
    return _failed(
        operation.id,
        f"operation {operation.id} is {operation.status}, but its call was not carried on "
        f"here{why}; get_operation"
        f'({{"id": "{operation.id}"}}) tells its outcome once it is',
        operation,
    )


async def _waits_again(deps: RunDeps, operation: Operation) -> ToolResult | None:
    """The result for an approved call that now waits for something else (a connection)."""
    found = await deps.store.list_operations(thread_id=operation.thread_id, run_id=operation.run_id)
    for other in found:
        if other.id != operation.id and other.status == "pending":
            return waiting_result(other)
    return None


async def _answer_on_thread(deps: RunDeps, operation: Operation) -> ToolResult | None:
    """The tool message that answers the operation's call on its thread, if there is one."""
    state = await deps.store.load(operation.thread_id)
    for message in reversed(state.messages):
        if message.get("role") == "tool" and message.get("tool_call_id") == operation.call_id:
            content = str(message.get("content") or "")
            # A saved tool message keeps no error flag: the oracle writes every error (a
            # denial, a failed call) as {"error": ...}.
            return ToolResult(
                operation.call_id, operation.tool, content, is_error=_is_error(content)
            )
    return None


def _is_error(content: str) -> bool:
    try:
        value = json.loads(content)
    except ValueError:
        return False
    return isinstance(value, dict) and "error" in value and len(value) == 1


def _failed(operation_id: str, message: str, operation: Operation | None = None) -> ToolResult:
    name = operation.tool if operation is not None else "?"
    call_id = operation.call_id if operation is not None else operation_id
    return failed_call(call_id, name, message)


def waiting_result(operation: Operation) -> ToolResult:
    """The result a client gets for a call that waits and that it cannot settle itself.

    Not an error: the call is held, not failed. It names the operation, what it waits for,
    and how a person settles it (the CLI and the HTTP API); ``get_operation`` then tells
    the outcome on this thread.
    """
    oid = operation.id
    if operation.kind == "connection":
        name = operation.details.get("connection", "?")
        what = f"connection {name!r} of plugin {operation.plugin!r}"
        http = f"PUT /connections/{operation.plugin}/{name}"
    else:
        what = "a person's approval"
        http = f'POST /operations/{oid}/decision {{"approve": true}} (or false)'
    reason = f": {operation.reason}" if operation.reason else ""
    message = (
        f"{operation.tool} was not run: it waits for {what} (operation {oid}){reason}. "
        f"A person can {how_to_settle(operation)}; over HTTP: {http}. Once settled, the call "
        f'runs once with these arguments; get_operation({{"id": "{oid}"}}) tells its outcome.'
    )
    body: Mapping[str, Any] = {
        "waiting": f"waiting_for_{operation.kind}",
        "operation": oid,
        "tool": operation.tool,
        "thread": operation.thread_id,
        "message": message,
    }
    return ToolResult(operation.call_id, operation.tool, json.dumps(body, ensure_ascii=False))


async def pending_of(
    deps: RunDeps, operation_id: str, thread_id: str, tool: str
) -> Operation | None:
    """The approval ``operation_id`` names, if it is one of this thread's for ``tool``.

    A client echoes the id back (``request_state``); anything else it might send names no
    operation of its own thread, and is treated as no answer.
    """
    if not isinstance(operation_id, str) or len(operation_id) > 64:
        return None
    found = await deps.store.get_operation(operation_id)
    if found is None or found.thread_id != thread_id or found.tool != tool:
        return None
    return found if found.kind == "approval" else None
