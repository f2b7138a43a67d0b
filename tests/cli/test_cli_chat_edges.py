"""``oracle chat``'s approval question: click's ``[y/N]`` convention, and a reason only when
the person gives one."""

from __future__ import annotations

import pytest

from oracle_core.cli.chat_approvals import approval_question, parse_decision

ANSWERS = [
    ("y", True, ""), ("Y", True, ""), ("yes", True, ""), ("YES ", True, ""),
    ("y go ahead", True, "go ahead"), ("", False, ""), ("   ", False, ""), ("\n", False, ""),
    ("n", False, ""), ("N", False, ""), ("no", False, ""), ("nope", False, ""),
    ("n not today", False, "not today"), ("no  too risky ", False, "too risky"),
    ("yeah", False, ""), ("maybe later", False, "later"),
]  # fmt: skip


@pytest.mark.parametrize(("answer", "approve", "reason"), ANSWERS)
def test_only_yes_approves_and_a_reason_is_only_what_the_person_typed(
    answer: str, approve: bool, reason: str
) -> None:
    assert parse_decision(answer) == (approve, reason)


def test_the_question_shows_that_enter_denies() -> None:
    operation = {"tool": "send_money", "arguments": {"to": "ada"}, "reason": "money moves"}

    question = approval_question(operation)

    assert "[y/N]" in question
    assert "why: money moves" in question


@pytest.mark.parametrize("answer", ["", "n", "no thanks", "x"])
def test_a_denial_never_carries_the_approvals_own_why(answer: str) -> None:
    _, reason = parse_decision(answer)

    assert reason is not None  # None would keep the operation's "why" as the reason
    assert "money moves" not in reason
