"""The one table of typed oracle errors and their HTTP answers (``server/errors.py``)."""

from __future__ import annotations

from oracle_core.errors import (
    DecisionConflictError,
    OperationError,
    OracleError,
    ThreadWaitingError,
    UnknownConnectionError,
)
from oracle_core.server.errors import ERROR_TABLE, ApiError, api_error


def test_no_row_is_shadowed_by_an_earlier_more_general_row() -> None:
    for index, row in enumerate(ERROR_TABLE):
        earlier = [e.error for e in ERROR_TABLE[:index]]
        assert not any(issubclass(row.error, general) for general in earlier), row


def test_the_most_specific_row_answers() -> None:
    conflict = api_error(DecisionConflictError("decided otherwise"))
    general = api_error(OperationError("cannot"))
    waiting = api_error(ThreadWaitingError("waits"))

    assert conflict is not None and (conflict.status, conflict.type) == (409, "decision_conflict")
    assert general is not None and (general.status, general.type) == (409, "operation_error")
    assert waiting is not None and waiting.type == "operation_error"


def test_the_answer_carries_the_errors_message() -> None:
    answer = api_error(UnknownConnectionError("no connection 'x' of plugin 'y'"))

    assert answer is not None
    assert (answer.status, answer.type, answer.message) == (
        404,
        "connection_not_found",
        "no connection 'x' of plugin 'y'",
    )


def test_an_error_the_table_does_not_name_has_no_answer() -> None:
    assert api_error(OracleError("unexpected")) is None
    assert api_error(RuntimeError("unexpected")) is None


def test_an_api_error_is_its_own_answer() -> None:
    error = ApiError(418, "teapot", "short and stout")

    assert api_error(error) is error
