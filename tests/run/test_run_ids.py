"""``Oracle.run`` takes user ids and thread ids by the same rule as the server (issue 38,
hole 6): a bad one raises a typed error naming the field before anything is saved, instead
of a run that fails writing the usage ledger; a good one is in the ledger as given."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from id_samples import bad_thread, bad_user, good_user

from oracle_core import InvalidThreadIdError, InvalidUserIdError
from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer
from oracle_core.store.usage import usage_report
from oracle_core.testing.openai_server import FakeOpenAI, Reply

CASES = 80


async def test_a_bad_user_id_or_thread_id_raises_naming_it_and_nothing_is_saved(
    make_oracle: Any, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    rng = random.Random(69)
    oracle = make_oracle(checkpointer=SQLiteCheckpointer(tmp_path / "oracle.db"))
    for index in range(CASES):
        if index % 2:
            user, _why = bad_user(rng)
            with pytest.raises(InvalidUserIdError, match=r"^user_id ") as refused:
                await oracle.run(f"t-{index}", "hi", user_id=user)
        else:
            thread = bad_thread(rng)
            with pytest.raises(InvalidThreadIdError, match=r"^thread id ") as refused:
                await oracle.run(thread, "hi")
        str(refused.value).encode("utf-8")
    assert fake_openai.requests == []
    assert await oracle.checkpointer.threads() == []
    assert (await usage_report(oracle.checkpointer))["groups"] == []


async def test_good_user_ids_are_in_the_usage_ledger_as_given(
    make_oracle: Any, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    rng = random.Random(70)
    oracle = make_oracle(checkpointer=SQLiteCheckpointer(tmp_path / "oracle.db"))
    users = {good_user(rng)[:195] + f"#{i}" for i in range(8)}
    for index, user in enumerate(sorted(users)):
        fake_openai.script(Reply.text("ok"))

        result = await oracle.run(f"t-{index}", "hi", user_id=user)

        assert result.status == "completed", result.error
    report = await usage_report(oracle.checkpointer, by="user")
    assert {g["key"] for g in report["groups"]} == users  # type: ignore[attr-defined, union-attr]
