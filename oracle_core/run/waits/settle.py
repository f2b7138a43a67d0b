"""Settling a wait, in one shape: decide, supply or cancel, then resume exactly once.

Every function works over a :class:`~oracle_core.run.deps.RunDeps` (the oracle is never
seen), and each settles the same way: one compare-and-set in the store moves the wait
from ``pending`` (to ``approved`` or ``denied``, ``supplied``, ``cancelled``), and then
:func:`resume` carries its run on. The same settlement again finds its own status and goes
on to the resume, which answers with the first outcome; a different one raises
:class:`~oracle_core.DecisionConflictError`. The resume is claimed by exactly one caller
(:class:`~oracle_core.run.waits.resume.ResumeStep`, the resumed run's first step); a
caller that loses the claim waits for the thread (the winner holds its lease while it
works) and answers with the outcome the winner saved.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from oracle_core.authoring.secrets import Secret
from oracle_core.credentials.sealed import Credentials
from oracle_core.errors import DecisionConflictError, OperationError, OperationNotFoundError
from oracle_core.plugins.registry import Registry
from oracle_core.run.deps import RunDeps
from oracle_core.run.loop import Run
from oracle_core.run.waits import connections
from oracle_core.run.waits.resume import ResumeStep, resumed_state
from oracle_core.store.operations import OperationStore
from oracle_core.values.messages import Usage
from oracle_core.values.operations import RUNNABLE_STATUSES, Operation
from oracle_core.values.result import RunResult

RESUME_ATTEMPTS = 5
"""Times a resume is tried while another caller holds the claim and then lets it go."""


def not_found(operation_id: str) -> OperationNotFoundError:
    """The error for an unknown id (the same for every id that is not there)."""
    shown = operation_id if len(operation_id) <= 64 else operation_id[:64] + "…"
    return OperationNotFoundError(
        f"no operation has the id {shown!r}: list them with `oracle operations`",
        operation_id=operation_id,
    )


def conflict(operation: Operation, settled: str, wanted: str) -> DecisionConflictError:
    """The error for a decision (or cancel) that came after ``operation`` was ``settled``."""
    return DecisionConflictError(
        f"operation {operation.id} {settled}; it cannot be {wanted} now",
        operation_id=operation.id,
        status=operation.status,
    )


async def get(deps: RunDeps, operation_id: str) -> Operation:
    """The operation (settled first).

    Raises:
        OperationNotFoundError: for an unknown id.
    """
    found = await deps.store.get_operation(operation_id)
    if found is None:
        raise not_found(operation_id)
    return found


def check_tool(deps: RunDeps, operation: Operation) -> None:
    """Make sure the operation's tool can still run in this oracle.

    Raises:
        OperationError: when its tool (of its plugin) is not loaded any more.
    """
    bound = deps.registry.tools.get(operation.tool)
    if bound is None or bound.plugin.name != operation.plugin:
        raise OperationError(
            f"operation {operation.id} holds a call of tool {operation.tool!r} of plugin "
            f"{operation.plugin!r}, which this oracle does not have (was the plugin removed "
            "or disabled?); nothing ran and nothing was recorded: add the plugin back and "
            f"decide again, or deny or cancel the operation",
            operation_id=operation.id,
        )


async def decide(
    deps: RunDeps, operation_id: str, *, approve: bool, reason: str | None = None
) -> RunResult:
    """Record a decision on an approval (once) and resume its run (once).

    Raises:
        OperationNotFoundError: for an unknown id.
        DecisionConflictError: when another decision was recorded first (or the deadline
            passed, which counts as a denial, and this one approves).
        OperationError: when the operation is not an approval, or an approved call's tool
            is gone (then nothing is recorded).
    """
    operation = await get(deps, operation_id)
    if operation.kind != "approval":
        raise OperationError(
            f"operation {operation.id} is a {operation.kind}, not an approval: "
            + (
                "supply its connection instead"
                if operation.kind == "connection"
                else "only approvals take a decision"
            ),
            operation_id=operation.id,
        )
    wanted = "approved" if approve else "denied"
    if approve and operation.status in ("pending", "approved"):
        check_tool(deps, operation)
    # The reason is the person's, or none: never the approval's own "why" it waited with,
    # which a denial would otherwise tell the model as if a person had said it.
    operation, _ = await deps.store.update_operation(
        operation.id, expect={"pending"}, status=wanted, reason=reason or ""
    )
    if operation.status != wanted:
        why = f" ({operation.reason})" if operation.reason else ""
        raise conflict(operation, f"was already settled as {operation.status}{why}", wanted)
    return await resume(deps, operation.id)


async def supply(
    credentials: Credentials,
    registry: Registry,
    running: Callable[[], Awaitable[RunDeps]],
    plugin: str,
    name: str,
    value: str | Secret,
    *,
    operations: OperationStore,
    user_id: str,
    grace: float,
) -> list[RunResult]:
    """Store a credential and resume every run waiting on it, each exactly once.

    ``operations`` is the store the waits are kept in (the checkpointer, beside the
    credentials).

    Storing a credential starts nothing: ``running`` (which starts the oracle) is asked
    for the deps only when a run is to resume. Only the caller whose compare-and-set moved
    a wait to ``supplied`` resumes it, so two supplies, two processes or a retry never run
    the waiting call twice; a wait supplied more than ``grace`` seconds (the lease time to
    live) ago and never resumed lost its supplier, and is resumed here.

    Raises:
        UnknownConnectionError: when no loaded plugin ``plugin`` declares ``name``.
        InvalidCredentialError: for an empty, too long or multi-line value, or a bad user id.
        SecretKeyError: when ``ORACLE_SECRET_KEY`` is missing or invalid (nothing is stored).
    """
    scope = await connections.store_credential(credentials, registry, plugin, name, value, user_id)
    store = operations
    results: list[RunResult] = []
    for operation in await connections.waiting(store, plugin, name, scope, "pending"):
        _, changed = await store.update_operation(
            operation.id, expect={"pending"}, status="supplied"
        )
        if changed:  # this caller won the compare-and-set: it alone resumes the run
            results.append(await resume(await running(), operation.id))
    supplied = await connections.waiting(store, plugin, name, scope, "supplied")
    for operation in connections.left_over(supplied, grace):
        connections.log.warning("resuming %s, supplied earlier but never resumed", operation.id)
        results.append(await resume(await running(), operation.id))
    return results


async def resume(deps: RunDeps, operation_id: str, *, stream: bool = False) -> RunResult:
    """Carry a settled operation's run on, exactly once; again: the first outcome.

    Raises:
        OperationNotFoundError: for an unknown id.
        OperationError: when the operation is still open, or its call's tool is gone.
    """
    for _ in range(RESUME_ATTEMPTS):
        operation = await get(deps, operation_id)
        if operation.outcome is not None and operation.resumed_at is not None:
            return outcome_result(operation)
        if operation.open:
            raise OperationError(
                f"operation {operation.id} is still {operation.status}: settle it first",
                operation_id=operation.id,
            )
        if operation.status in RUNNABLE_STATUSES:
            check_tool(deps, operation)
        step = ResumeStep(operation)
        run = Run(deps, resumed_state(operation, stream=stream), step)
        events = [event async for event in run.events()]  # the run tells the followers
        result = RunResult.from_events(operation.thread_id, events)
        if step.claimed is not None or not step.not_claimed:
            return result  # resumed; or e.g. the thread stayed busy: the decision stands
    operation = await get(deps, operation_id)
    if operation.outcome is not None:
        return outcome_result(operation)
    return RunResult(
        operation.run_id,
        operation.thread_id,
        "failed",
        "",
        Usage(),
        f"operation {operation.id} is being carried on by another caller; ask again later",
    )


def outcome_result(operation: Operation) -> RunResult:
    """The :class:`RunResult` saved when ``operation`` was carried on (without events)."""
    saved: Mapping[str, Any] = operation.outcome or {}
    usage = saved.get("usage") or {}
    return RunResult(
        str(saved.get("run_id") or operation.run_id),
        operation.thread_id,
        str(saved.get("status") or "completed"),
        str(saved.get("answer") or ""),
        Usage.from_dict(usage),
        saved.get("error"),
        [],
        [Operation.from_record(o) for o in saved.get("operations") or []],
    )


async def cancel(deps: RunDeps, operation_id: str) -> Operation:
    """Cancel an operation: a background call stops; a wait answers its call as cancelled.

    A cancelled wait's run is carried on once (its call answered "cancelled") and ends
    ``cancelled``, so its thread takes new messages again. Cancelling a cancelled
    operation again changes nothing.

    Raises:
        OperationNotFoundError: for an unknown id.
        DecisionConflictError: when the operation was settled otherwise first.
    """
    operation = await get(deps, operation_id)
    if operation.kind == "background":
        background = deps.executor.background
        if background is not None:
            operation = await background.cancel(operation.id, "cancelled by a person")
        else:
            operation, _ = await deps.store.update_operation(
                operation.id, expect={"running"}, status="cancelled", error="cancelled"
            )
        settled = f"already ended as {operation.status}"
    else:
        operation, _ = await deps.store.update_operation(
            operation.id, expect={"pending"}, status="cancelled", reason="cancelled by a person"
        )
        settled = f"was already settled as {operation.status}"
    if operation.status != "cancelled":
        raise conflict(operation, settled, "cancelled")
    if operation.kind == "background":
        return operation
    await resume(deps, operation.id)
    return await get(deps, operation.id)
