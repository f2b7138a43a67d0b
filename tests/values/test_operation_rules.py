"""The pure rules of an operation (settle, update, claim, finish), written once for every store."""

from __future__ import annotations

import pytest

from oracle_core import OperationNotFoundError
from oracle_core.values import operations as rules
from oracle_core.values.operations import (
    BACKGROUND_LOST_ERROR,
    DEADLINE_REASON,
    Facts,
    Operation,
    Update,
)

NOW = 1_000.0


def approval(**changes: object) -> Operation:
    made = Operation(
        id="op_1",
        kind="approval",
        status="pending",
        thread_id="t",
        run_id="run_1",
        created_at=NOW - 10,
        updated_at=NOW - 10,
        details={"satisfied": []},
    )
    return made.replace(**changes)


def background(**changes: object) -> Operation:
    return approval(kind="background", status="running").replace(**changes)


def test_settling_denies_a_pending_approval_at_its_deadline() -> None:
    ruling = rules.settle(approval(deadline=NOW), Facts(NOW))

    assert ruling.save is not None and ruling.answer == ruling.save
    assert (ruling.answer.status, ruling.answer.reason) == ("denied", DEADLINE_REASON)
    assert ruling.answer.updated_at == NOW


def test_settling_leaves_an_approval_before_its_deadline_or_without_one() -> None:
    for operation in (approval(deadline=NOW + 1), approval(), approval(status="approved")):
        ruling = rules.settle(operation, Facts(NOW))

        assert ruling.save is None and ruling.answer is operation


def test_settling_fails_a_running_background_operation_whose_worker_died() -> None:
    lost = rules.settle(background(), Facts(NOW, worker_alive=False))
    alive = rules.settle(background(), Facts(NOW, worker_alive=True))

    assert lost.save is not None
    assert (lost.answer.status, lost.answer.error) == ("failed", BACKGROUND_LOST_ERROR)
    assert alive.save is None and alive.answer.status == "running"


def test_an_update_from_an_expected_status_changes_the_operation() -> None:
    request = Update("op_1", expect={"pending"}, status="approved", reason="fine")

    ruling = rules.update(approval(), request, Facts(NOW))

    operation, changed = ruling.answer
    assert changed and ruling.save == operation
    assert (operation.status, operation.reason, operation.updated_at) == ("approved", "fine", NOW)


def test_an_update_from_another_status_is_refused_and_changes_nothing() -> None:
    current = approval(status="denied", reason="no")
    request = Update("op_1", expect={"pending"}, status="approved", reason="fine")

    ruling = rules.update(current, request, Facts(NOW))

    assert ruling.answer == (current, False)
    assert ruling.save is None


def test_a_repeated_update_answers_with_the_first_outcome() -> None:
    request = Update("op_1", expect={"pending"}, status="approved", reason="first")
    first, _ = rules.update(approval(), request, Facts(NOW)).answer
    again = Update("op_1", expect={"pending"}, status="denied", reason="second")

    ruling = rules.update(first, again, Facts(NOW + 1))

    assert ruling.answer == (first, False)
    assert ruling.save is None


def test_an_update_sees_the_operation_settled_first() -> None:
    request = Update("op_1", expect={"pending"}, status="approved")

    ruling = rules.update(approval(deadline=NOW - 1), request, Facts(NOW))

    operation, changed = ruling.answer
    assert not changed and operation.status == "denied"
    assert ruling.save == operation  # the denial is written even though the update lost


def test_an_update_keeps_what_it_is_not_given_merges_details_and_cleans_text() -> None:
    current = approval(reason="why", details={"satisfied": ["approval"], "a": 1})
    request = Update(
        "op_1", expect={"pending"}, status="supplied", error="bad \ud83d", details={"b": 2}
    )

    operation, _ = rules.update(current, request, Facts(NOW)).answer

    assert operation.reason == "why"
    assert operation.error == "bad \ufffd"
    assert dict(operation.details) == {"satisfied": ["approval"], "a": 1, "b": 2}


def test_updating_an_unknown_operation_is_an_error_naming_it() -> None:
    with pytest.raises(OperationNotFoundError, match="op_gone"):
        rules.update(None, Update("op_gone", expect={"pending"}, status="approved"), Facts(NOW))


def test_an_open_operation_cannot_be_claimed() -> None:
    for operation in (approval(), background()):
        ruling = rules.claim(operation, "r1", Facts(NOW, worker_alive=True))

        assert ruling.answer is None and ruling.save is None


def test_claiming_a_settled_operation_takes_it_for_the_owner() -> None:
    ruling = rules.claim(approval(status="approved"), "r1", Facts(NOW))

    assert ruling.answer is not None and ruling.save == ruling.answer
    assert (ruling.answer.claimed_by, ruling.answer.claims) == ("r1", 1)


def test_a_repeated_claim_by_its_owner_answers_with_the_first_claim() -> None:
    first = rules.claim(approval(status="approved"), "r1", Facts(NOW)).answer
    assert first is not None

    again = rules.claim(first, "r1", Facts(NOW + 1, thread_holder="r1"))

    assert again.answer == first and again.save is None


def test_a_claim_held_by_a_live_owner_is_refused() -> None:
    held = approval(status="approved", claimed_by="r1", claims=1)

    ruling = rules.claim(held, "r2", Facts(NOW, thread_holder="r1"))

    assert ruling.answer is None and ruling.save is None


@pytest.mark.parametrize("thread_holder", [None, "r3"])
def test_a_claim_whose_owner_died_is_taken_over(thread_holder: str | None) -> None:
    held = approval(status="approved", claimed_by="r1", claims=1)

    ruling = rules.claim(held, "r2", Facts(NOW, thread_holder=thread_holder))

    assert ruling.answer is not None and ruling.save == ruling.answer
    assert (ruling.answer.claimed_by, ruling.answer.claims) == ("r2", 2)


def test_an_operation_carried_on_cannot_be_claimed_again() -> None:
    done = approval(status="approved", claimed_by="r1", claims=1, resumed_at=NOW - 1)

    assert rules.claim(done, "r1", Facts(NOW)).answer is None
    assert rules.claim(done, "r2", Facts(NOW)).answer is None


def test_claiming_settles_first_so_an_expired_approval_is_claimed_denied() -> None:
    ruling = rules.claim(approval(deadline=NOW), "r1", Facts(NOW))

    assert ruling.answer is not None and ruling.answer.status == "denied"
    assert ruling.answer.claimed_by == "r1" and ruling.save == ruling.answer


def test_claiming_an_unknown_operation_is_refused() -> None:
    assert rules.claim(None, "r1", Facts(NOW)).answer is None


def test_finishing_saves_the_outcome_once_for_the_claim_holder() -> None:
    claimed = approval(status="approved", claimed_by="r1", claims=1)

    ruling = rules.finish(claimed, "r1", {"status": "completed \ud83d"}, NOW)

    assert ruling.answer is True and ruling.save is not None
    assert ruling.save.resumed_at == NOW
    assert dict(ruling.save.outcome or {}) == {"status": "completed \ufffd"}
    again = rules.finish(ruling.save, "r1", {"status": "again"}, NOW + 1)
    assert again.answer is False and again.save is None


def test_finishing_without_the_claim_changes_nothing() -> None:
    claimed = approval(status="approved", claimed_by="r1", claims=1)

    for operation, owner in ((claimed, "r2"), (approval(status="approved"), "r1"), (None, "r1")):
        ruling = rules.finish(operation, owner, {"status": "completed"}, NOW)

        assert ruling.answer is False and ruling.save is None
