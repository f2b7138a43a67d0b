"""``/connections``: which credentials are set (never their values), set one, delete one.

``PUT /connections/{plugin}/{name}`` stores the credential sealed and resumes the runs
waiting for it, answering with their outcomes. Every route needs the server's token. The
value travels only in the request body (never in a URL, which proxies log) and is held as
a pydantic ``SecretStr`` from the moment it is parsed; the body is validated here, not by
FastAPI, whose errors name unknown keys, so no error or log shows a value.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field, ValidationError
from starlette.responses import Response

from oracle_core.authoring.secrets import Secret
from oracle_core.credentials.sealed import find_connection
from oracle_core.server.bodies import CredentialBody
from oracle_core.server.context import ServerContext
from oracle_core.server.errors import ApiError
from oracle_core.server.models import UNAUTHORIZED, ErrorBody
from oracle_core.values.ids import check_user_id


class ConnectionLine(BaseModel):
    """One connection and whether it is set for one user (or for everyone, when shared)."""

    plugin: str
    connection: str
    kind: str | None
    per_user: bool
    user_id: str | None
    set: bool
    updated_at: float | None
    help: str
    declared: bool


class ConnectionList(BaseModel):
    """``GET /connections``."""

    connections: list[ConnectionLine]


class CredentialSet(BaseModel):
    """``PUT /connections/{plugin}/{name}``: what was set and the runs it resumed."""

    plugin: str
    connection: str
    user_id: str | None = Field(description="Whose it is; null for a shared connection.")
    set: bool
    resumed: list[dict[str, Any]] = Field(description="Each resumed run, as a run's JSON.")


_BODY_DOC = {
    "required": True,
    "content": {"application/json": {"schema": CredentialBody.model_json_schema()}},
}


async def read_body(request: Request) -> CredentialBody:
    """The body, validated by hand: FastAPI's errors would name (so echo) unknown keys.

    Raises:
        ApiError: 400 for a body that is not JSON, 422 naming only the fields this route
            knows (never a key or value the client sent).
    """
    try:
        data = json.loads(await request.body())
    except (ValueError, RecursionError):
        raise ApiError(
            400,
            "invalid_json",
            'the request body is not valid JSON: send {"value": "...", "user_id": "..."}',
        ) from None
    if not isinstance(data, dict):
        raise ApiError(422, "invalid_request", 'the body must be a JSON object: {"value": ...}')
    if set(data) - {"value", "user_id"}:
        raise ApiError(422, "invalid_request", "the body takes only the fields value and user_id")
    try:
        body = CredentialBody.model_validate(data)
    except ValidationError as error:
        fields = sorted({str(e["loc"][0]) for e in error.errors() if e["loc"]})
        raise ApiError(
            422,
            "invalid_request",
            f"invalid {', '.join(fields) or 'body'}: value must be a non-empty string and "
            "user_id a string of 1 to 200 characters",
        ) from None
    check_user_id(body.user_id)  # the one rule for user ids (a 422 naming the field)
    return body


def connections_router(ctx: ServerContext) -> APIRouter:
    """``GET /connections``, ``PUT`` and ``DELETE /connections/{plugin}/{name}`` (token needed)."""
    router = APIRouter(
        dependencies=[Depends(ctx.auth)],
        responses={
            401: UNAUTHORIZED,
            422: {"model": ErrorBody, "description": "The request does not fit."},
        },
        tags=["connections"],
    )
    oracle = ctx.oracle

    @router.get("/connections", response_model=ConnectionList)
    async def list_connections(
        user_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    ) -> dict[str, Any]:
        """Every connection plugins declare, and whether it is set, per user; never a value."""
        if user_id is not None:
            check_user_id(user_id)
        lines = await oracle.connection_statuses(user_id=user_id)
        return {"connections": [line.to_json() for line in lines]}

    @router.put(
        "/connections/{plugin}/{name}",
        response_model=CredentialSet,
        openapi_extra={"requestBody": _BODY_DOC},
        responses={
            404: {"model": ErrorBody, "description": "No such plugin or connection."},
            503: {"model": ErrorBody, "description": "ORACLE_SECRET_KEY is missing or invalid."},
        },
    )
    async def set_credential(plugin: str, name: str, request: Request) -> dict[str, Any]:
        """Store the credential (encrypted) and resume the runs waiting for it, once each.

        The body is ``{"value": "...", "user_id": "..."}``; ``user_id`` defaults to
        ``"default"`` and is ignored for a shared connection.
        """
        body = await read_body(request)
        resumed = await oracle.supply_credential(
            plugin, name, Secret(body.value.get_secret_value()), user_id=body.user_id
        )
        per_user = find_connection(oracle.registry, plugin, name).per_user
        return {
            "plugin": plugin,
            "connection": name,
            "user_id": body.user_id if per_user else None,
            "set": True,
            "resumed": [r.to_json() for r in resumed],
        }

    @router.delete(
        "/connections/{plugin}/{name}",
        status_code=204,
        responses={404: {"model": ErrorBody, "description": "Not declared, or not set."}},
    )
    async def delete_credential(
        plugin: str,
        name: str,
        user_id: Annotated[str, Query(min_length=1, max_length=200)] = "default",
    ) -> Response:
        """Remove a stored credential; a later call that needs it waits for it again."""
        check_user_id(user_id)
        gone = await oracle.delete_credential(plugin, name, user_id=user_id)
        if not gone:
            raise ApiError(
                404, "credential_not_set", f"connection {name!r} of plugin {plugin!r} is not set"
            )
        return Response(status_code=204)

    return router
