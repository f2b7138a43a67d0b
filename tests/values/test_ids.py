"""The one rule for user ids and thread ids (issue 38, holes 6 and 10): what it takes and
what it refuses, over seeded variants."""

from __future__ import annotations

import random

import pytest
from id_samples import bad_thread, bad_user, good_user

from oracle_core.credentials import sealed
from oracle_core.errors import InvalidCredentialError, InvalidThreadIdError, InvalidUserIdError
from oracle_core.values.ids import MAX_USER_ID, check_thread_id, check_user_id

CASES = 600


def test_user_ids_of_printable_text_up_to_the_limit_are_taken_as_they_are() -> None:
    rng = random.Random(60)
    for _ in range(CASES):
        user = good_user(rng)

        assert check_user_id(user) is user
    assert check_user_id("x" * MAX_USER_ID)


@pytest.mark.parametrize("field", ["user_id", "user"])
def test_user_ids_with_a_lone_surrogate_a_control_or_too_long_are_refused_naming_the_field(
    field: str,
) -> None:
    rng = random.Random(61)
    for _ in range(CASES):
        user, why = bad_user(rng)

        with pytest.raises(InvalidUserIdError) as refused:
            check_user_id(user, field)

        message = str(refused.value)
        assert message.startswith(f"{field} "), (why, message)
        assert f"use 1 to {MAX_USER_ID} characters" in message
        message.encode("utf-8")  # the message itself is always writable
        assert len(message) < 400


def test_thread_ids_outside_the_rule_are_refused_writably() -> None:
    rng = random.Random(62)
    for _ in range(CASES):
        thread = bad_thread(rng)

        with pytest.raises(InvalidThreadIdError) as refused:
            check_thread_id(thread)

        str(refused.value).encode("utf-8")


def test_a_credential_takes_user_ids_by_the_same_rule() -> None:
    rng = random.Random(63)
    for _ in range(CASES):
        good = good_user(rng)
        bad, _why = bad_user(rng)

        assert sealed.check_user_id(good) == good
        with pytest.raises(InvalidCredentialError, match="not valid for a credential"):
            sealed.check_user_id(bad)
