"""Error responses: every failure is ``{"error": {"type": ..., "message": ...}}``.

The shape is OpenAI's, so the ``openai`` client shows the message as is, and one client
handles errors from every endpoint the same way. :data:`ERROR_TABLE` is the one place
that says which HTTP status and error type answer each typed oracle error: routes let
those errors rise, and the handler :func:`install_error_handlers` puts on the app
answers them (an oracle error the table does not name is an internal error, a 500).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response

from oracle_core.errors import (
    ClientToolError,
    CredentialUnreadableError,
    DecisionConflictError,
    InvalidCredentialError,
    InvalidThreadIdError,
    InvalidUserIdError,
    OperationError,
    OperationNotFoundError,
    OracleError,
    OutputSchemaError,
    SecretKeyError,
    ThreadConflictError,
    ToolResultsError,
    UnknownConnectionError,
)

log = logging.getLogger("oracle_core.server")


class ApiError(Exception):
    """An error answered to the client with a status, a machine type and a human message.

    Args:
        status: the HTTP status.
        type: a stable machine-readable kind (``thread_busy``, ``unauthorized``, ...).
        message: what went wrong and how to fix it.
        headers: extra response headers (``WWW-Authenticate``, ``Retry-After``, ...).
    """

    def __init__(
        self, status: int, type: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.headers = dict(headers or {})

    def response(self) -> JSONResponse:
        """The error as a JSON response."""
        return error_response(self.status, self.type, self.message, self.headers)


def error_response(
    status: int, type: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """A JSON error response in the server's one error shape."""
    return JSONResponse(
        {"error": {"type": type, "message": message}}, status_code=status, headers=headers
    )


@dataclass(frozen=True)
class ErrorRow:
    """One row of :data:`ERROR_TABLE`: an oracle error type and the HTTP answer to it.

    Attributes:
        error: the error class (its subclasses match too, unless an earlier row names them).
        status: the HTTP status of the answer.
        type: the machine-readable ``error.type`` of the answer; the message is the error's.
    """

    error: type[OracleError]
    status: int
    type: str


ERROR_TABLE: tuple[ErrorRow, ...] = (
    ErrorRow(InvalidThreadIdError, 422, "invalid_thread_id"),
    ErrorRow(InvalidUserIdError, 422, "invalid_user_id"),
    ErrorRow(ClientToolError, 400, "invalid_tools"),
    ErrorRow(ToolResultsError, 400, "invalid_tool_results"),
    ErrorRow(OutputSchemaError, 400, "invalid_output_schema"),
    ErrorRow(ThreadConflictError, 409, "thread_conflict"),
    ErrorRow(OperationNotFoundError, 404, "operation_not_found"),
    ErrorRow(DecisionConflictError, 409, "decision_conflict"),
    ErrorRow(OperationError, 409, "operation_error"),
    ErrorRow(UnknownConnectionError, 404, "connection_not_found"),
    ErrorRow(InvalidCredentialError, 422, "invalid_credential"),
    ErrorRow(SecretKeyError, 503, "secret_key_error"),
    ErrorRow(CredentialUnreadableError, 503, "secret_key_error"),
)
"""Typed oracle errors and their HTTP answers, most specific first (the first match wins).

Their messages are written for the caller and never hold a secret (a credential's value),
so they are answered as they are.
"""


def api_error(error: BaseException) -> ApiError | None:
    """The HTTP answer :data:`ERROR_TABLE` gives ``error``, or ``None`` if it names none."""
    if isinstance(error, ApiError):
        return error
    for row in ERROR_TABLE:
        if isinstance(error, row.error):
            return ApiError(row.status, row.type, str(error))
    return None


_STATUS_TYPES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "body_too_large",
    422: "invalid_request",
}


def describe_validation(errors: list[Any]) -> tuple[int, str, str]:
    """Turn FastAPI's validation errors into (status, type, one clear message)."""
    for error in errors:
        if error.get("type") == "json_invalid":
            reason = (error.get("ctx") or {}).get("error", "JSON decode error")
            position = error.get("loc", ("body", "?"))[-1]
            return (
                400,
                "invalid_json",
                (
                    f"the request body is not valid JSON ({reason} at character {position}); "
                    "send a JSON object with Content-Type: application/json"
                ),
            )
    parts = []
    for error in errors:
        location = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        if error.get("type") == "missing" and location == "body":
            parts.append("the request needs a JSON body sent with Content-Type: application/json")
        elif error.get("type") == "model_attributes_type" and location == "body":
            parts.append("the body must be a JSON object sent with Content-Type: application/json")
        else:
            parts.append(f"{location}: {error.get('msg', 'invalid')}")
    return 422, "invalid_request", "; ".join(parts) or "the request is invalid"


async def _api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiError)
    return error.response()


async def _oracle_error(request: Request, error: Exception) -> Response:
    answer = api_error(error)
    if answer is None:
        # Not a failure the caller can act on: let it reach the internal-error handler
        # (logged, a 500), as any other unexpected exception does.
        raise error
    return answer.response()


async def internal_error(request: Request, error: Exception) -> Response:
    """The 500 for an exception no route expected; the error goes to the log, not the client."""
    log.error("%s %s failed", request.method, request.url.path, exc_info=error)
    return error_response(
        500, "server_error", f"internal error ({type(error).__name__}); see the server log"
    )


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    kind = _STATUS_TYPES.get(error.status_code, "error")
    message = error.detail if isinstance(error.detail, str) else str(error.detail)
    if error.status_code == 404 and message == "Not Found":
        message = f"no route {request.method} {request.url.path}; see /docs for the API"
    elif error.status_code == 405:
        allowed = (error.headers or {}).get("Allow", "")
        message = f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}"
    return error_response(error.status_code, kind, message, error.headers)


async def _validation_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestValidationError)
    status, kind, message = describe_validation(list(error.errors()))
    return error_response(status, kind, message)


def install_error_handlers(app: FastAPI) -> None:
    """Answer every API error, typed oracle error (:data:`ERROR_TABLE`), HTTP error,
    validation error and unexpected exception in the one error shape."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(OracleError, _oracle_error)
    app.add_exception_handler(Exception, internal_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
