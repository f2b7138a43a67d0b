"""``/operations``: list, show, decide and cancel operations (approvals, connections, background).

``POST /operations/{id}/decision`` records an approval's decision (a compare-and-set) and
resumes the waiting run in this process, answering with the operation and the resumed
run's JSON. The same decision again answers with the first outcome; a different one is
refused with 409 (``decision_conflict``); an unknown id is 404 (``operation_not_found``,
the same answer for every id that is not there). Every route needs the server's token.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, Field

from oracle_core.server.bodies import DecisionBody
from oracle_core.server.context import ServerContext
from oracle_core.server.errors import ApiError
from oracle_core.server.models import UNAUTHORIZED, ErrorBody
from oracle_core.values.operations import OPERATION_STATUSES, Operation

MAX_ID_CHARS = 64
"""Characters of an operation id a route accepts (ids are ``op_`` and 24 hex digits)."""

OperationId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS)]


class OperationList(BaseModel):
    """``GET /operations``."""

    operations: list[dict[str, Any]]


class DecisionResult(BaseModel):
    """``POST /operations/{id}/decision``: the operation and the resumed run."""

    operation: dict[str, Any]
    run: dict[str, Any] = Field(description="The resumed run, as a run's JSON.")


class CancelResult(BaseModel):
    """``POST /operations/{id}/cancel``."""

    operation: dict[str, Any]


def operations_router(ctx: ServerContext) -> APIRouter:
    """``GET /operations``, ``GET /operations/{id}``, ``POST .../decision``, ``POST .../cancel``."""
    router = APIRouter(
        dependencies=[Depends(ctx.auth)],
        responses={
            401: UNAUTHORIZED,
            404: {"model": ErrorBody, "description": "No operation has this id."},
            422: {"model": ErrorBody, "description": "The request does not fit."},
        },
        tags=["operations"],
    )
    oracle = ctx.oracle

    @router.get("/operations", response_model=OperationList)
    async def list_operations(
        thread_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
        status: Annotated[str | None, Query(max_length=40)] = None,
    ) -> dict[str, Any]:
        """Operations, oldest first; ``thread_id`` and ``status`` narrow the list."""
        if status is not None and status not in OPERATION_STATUSES:
            raise ApiError(
                422,
                "invalid_request",
                f"status must be one of {sorted(OPERATION_STATUSES)}, not {status[:40]!r}",
            )
        found = await oracle.operations(thread_id=thread_id, status=status)
        return {"operations": [o.to_json() for o in found]}

    @router.get("/operations/{operation_id}")
    async def show_operation(operation_id: OperationId) -> dict[str, Any]:
        """One operation: its call, status, reason, result, deadline."""
        return (await oracle.operation(operation_id)).to_json()

    @router.post(
        "/operations/{operation_id}/decision",
        response_model=DecisionResult,
        responses={409: {"model": ErrorBody, "description": "Another decision came first."}},
    )
    async def decide(operation_id: OperationId, body: DecisionBody) -> dict[str, Any]:
        """Approve or deny an approval, once, and resume its run, once."""
        result = await oracle.decide(operation_id, approve=body.approve, reason=body.reason)
        operation = await oracle.operation(operation_id)
        return {"operation": operation.to_json(), "run": result.to_json()}

    @router.post(
        "/operations/{operation_id}/cancel",
        response_model=CancelResult,
        responses={409: {"model": ErrorBody, "description": "It was settled otherwise first."}},
    )
    async def cancel(operation_id: OperationId) -> dict[str, Any]:
        """Cancel an operation: a background call stops, a waiting call is answered cancelled."""
        operation = await oracle.cancel_operation(operation_id)
        return {"operation": operation.to_json()}

    return router


def waiting_message(operations: list[Operation]) -> str:
    """What an OpenAI-compatible answer says for a run that waits: each operation, and how
    to settle it over HTTP (or the CLI)."""
    lines = []
    for operation in operations:
        oid = operation.id
        call = f"{operation.plugin}.{operation.tool}"
        if operation.kind == "connection":
            name = operation.details.get("connection", "?")
            lines.append(
                f"This request waits for connection {name!r} of plugin {operation.plugin!r} "
                f"(operation {oid}). Supply it with PUT /connections/{operation.plugin}/{name} "
                f"or `oracle connections set {operation.plugin} {name}`."
            )
            continue
        lines.append(
            f"This request waits for a person to approve {call} (operation {oid}). "
            f'Decide with POST /operations/{oid}/decision {{"approve": true}} (or false), '
            f"or `oracle operations approve {oid}` / `oracle operations deny {oid}`."
        )
    return "\n".join(lines) or "This request waits for an operation."
