"""What a new run does with its thread's operations as it opens.

The oracle hands :func:`open_operations` to the run loop in its
:class:`~oracle_core.run.deps.RunDeps` (the loop knows it only as the protocol
:class:`~oracle_core.run.opening.OpenOperations`). Three things, from one query of the thread's operations:

- a thread whose run waits (a call of its last model response holds an operation not
  carried on yet) takes no new message: :class:`~oracle_core.ThreadWaitingError` names
  the operation and how to settle it, so an approval is never lost under a new turn;
- finished background operations not yet handed to the thread are claimed, to be saved
  as ``get_operation`` calls and answers before the user's message;
- whether the thread has any operation, so the request shows ``get_operation``.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from oracle_core.errors import ThreadWaitingError
from oracle_core.run.opening import unanswered_calls
from oracle_core.run.waits.background import deliveries, delivery_messages
from oracle_core.store.base import Checkpointer
from oracle_core.store.facets import facet_of
from oracle_core.values.messages import Message
from oracle_core.values.operations import Operation


@dataclass
class Opening:
    """A thread's operations, as a run opening on it needs them.

    Attributes:
        any: whether the thread has any operation (``get_operation`` is shown then).
        delivered: finished background operations this run claimed to hand over.
    """

    any: bool = False
    delivered: list[Operation] = field(default_factory=list)

    def messages(self) -> list[Message]:
        """The ``get_operation`` calls and answers that hand the results over."""
        return [m for o in self.delivered for m in delivery_messages(o)]

    async def finish(self, store: Checkpointer, owner: str) -> None:
        """Mark the handed-over operations carried on (after their messages were saved)."""
        for operation in self.delivered:
            await store.finish_operation(operation.id, owner, {"delivered": "thread"})


def how_to_settle(operation: Operation) -> str:
    """A sentence telling a person how to settle ``operation`` (CLI commands)."""
    oid = operation.id
    if operation.kind == "connection":
        name = operation.details.get("connection", "?")
        user = (
            f" --user {shlex.quote(operation.user_id)}" if operation.details.get("per_user") else ""
        )
        return (
            f"supply it with `oracle connections set {operation.plugin} {name}{user}`, "
            f"or cancel it with `oracle operations cancel {oid}`"
        )
    if operation.status == "pending":
        return (
            f"decide it with `oracle operations approve {oid}` or `oracle operations deny "
            f"{oid}`, or cancel it with `oracle operations cancel {oid}`"
        )
    if operation.status in ("approved", "denied"):
        verb = "approve" if operation.status == "approved" else "deny"
        again = f"`oracle operations {verb} {oid}` (the same decision again)"
    elif operation.status == "cancelled":
        again = f"`oracle operations cancel {oid}` (again)"
    else:  # supplied: the connection is set
        again = f"`oracle connections set {operation.plugin} ...` (again)"
    return f"it was {operation.status} but its run did not resume yet: resume it with {again}"


async def open_operations(
    store: Checkpointer, thread_id: str, owner: str, messages: Sequence[Message]
) -> Opening:
    """The thread's operations for a run opening on it (``owner`` holds the thread's lease).

    Raises:
        ThreadWaitingError: when a run of the thread waits for an operation.
    """
    store_operations = facet_of(store, "operations")
    if store_operations is None:  # a store without operations: no thread waits for one
        return Opening()
    operations = await store_operations.list_operations(thread_id=thread_id)
    if not operations:
        return Opening()
    unanswered = set(unanswered_calls(messages))
    for operation in operations:
        if (
            operation.kind != "background"
            and operation.call_id in unanswered
            and operation.resumed_at is None
        ):
            raise ThreadWaitingError(
                f"thread {thread_id!r} waits for operation {operation.id} ({operation.kind} "
                f"of {operation.plugin}.{operation.tool}) and takes no new message until it "
                f"is settled: {how_to_settle(operation)}",
                operation_id=operation.id,
            )
    delivered = []
    for operation in deliveries(operations, owner):
        claimed = await store.claim_operation(operation.id, owner)
        if claimed is not None:
            delivered.append(claimed)
    return Opening(True, delivered)
