"""Budgets per user and thread, and the usage ledger every run writes (one process).

The cross-process promise is in ``test_budgets_processes.py``; the store side in
``test_budgets_store.py``.
"""

from __future__ import annotations

import asyncio
import calendar
import logging
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeOracle
from support import CodePlugin

from oracle_core import BudgetExceededError, ConfigError, Settings
from oracle_core.run.budgets import Budget, BudgetGuard, Budgets, window_start
from oracle_core.store import SQLiteCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply


def settings_with(tmp_path: Path, budgets: str) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "oracle.toml").write_text(f"[budgets]\n{budgets}\n", encoding="utf-8")
    return Settings.from_env({"ORACLE_HOME": str(home)})


def test_budgets_are_read_as_scope_window_and_measure() -> None:
    budgets = Budgets.from_config({"user_day_tokens": 1000, "thread_month_cost": 2.5})

    assert budgets.budgets == (
        Budget("user", "day", "tokens", 1000.0),
        Budget("thread", "month", "cost", 2.5),
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            {"user_week_tokens": 5},
            r"unknown key 'user_week_tokens'.*user or thread",
            id="an unknown key, named with the schema",
        ),
        pytest.param(
            {"user_day_cost": "5"},
            r"budgets.user_day_cost is a string; expected a number",
            id="a budget that is not a number",
        ),
    ],
)
def test_a_bad_budget_is_refused_saying_what_is_wrong(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Budgets.from_config(config)


BAD_BUDGETS = [
    ("user_week_tokens = 5000", "unknown key 'user_week_tokens' (did you mean user_day_tokens?)"),
    ("user_day_token = 5", "unknown key 'user_day_token' (did you mean user_day_tokens?)"),
    ("team_day_tokens = 5", "unknown key 'team_day_tokens'"),
    ("hold = 5", "unknown key 'hold'"),
    ('user_day_cost = "5"', "budgets.user_day_cost is a string; expected a number at least 0"),
    ("user_day_cost = -1", "budgets.user_day_cost is an integer; expected a number at least 0"),
    ("user_day_tokens = nan", "budgets.user_day_tokens is a number; expected a number at least 0"),
    ("user_day_tokens = true", "budgets.user_day_tokens is a boolean; expected a number"),
    ("user_day_tokens = [1]", "budgets.user_day_tokens is an array; expected a number"),
    ("hold_seconds = 0", "budgets.hold_seconds is an integer; expected a number of seconds above 0"),
    ("hold_seconds = inf", "budgets.hold_seconds is a number; expected a number of seconds"),
]  # fmt: skip


@pytest.mark.parametrize("seed", range(len(BAD_BUDGETS) * 2))
def test_a_bad_budgets_table_is_one_line_naming_the_file_the_line_and_the_fix(
    tmp_path: Path, seed: int
) -> None:
    # Read with every other setting, so every command refuses it, not only a starting server.
    line, expected = BAD_BUDGETS[seed % len(BAD_BUDGETS)]
    good = ["user_day_requests = 10", "thread_month_tokens = 5000", "user_month_requests = 60"]
    at = seed // len(BAD_BUDGETS) * len(good) // 2  # the bad key first, or among good ones
    settings = settings_with(tmp_path, "\n".join([*good[:at], line, *good[at:]]))

    with pytest.raises(ConfigError) as refused:
        settings.check_config()

    said = str(refused.value)
    assert said.startswith(f"{settings.config_path}, line {at + 2}: "), said
    assert expected in said, said
    assert "\n" not in said


def test_windows_are_utc_calendar_days_and_months() -> None:
    moment = calendar.timegm((2026, 3, 17, 23, 59, 0))

    assert window_start("day", moment) == calendar.timegm((2026, 3, 17, 0, 0, 0))
    assert window_start("month", moment) == calendar.timegm((2026, 3, 1, 0, 0, 0))


async def test_every_model_call_and_tool_call_is_in_the_ledger(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    weather = CodePlugin("weather", visibility="always", tools=("forecast",))
    fake_openai.script(
        Reply(tool_calls=[("forecast", {})], usage=(30, 10)),
        Reply(content="sunny", usage=(50, 5)),
    )
    store = SQLiteCheckpointer(tmp_path / "oracle.db")
    oracle = make_oracle(weather, checkpointer=store)

    result = await oracle.run("t1", "weather?", user_id="ann")

    entries = await store.usage()
    assert result.status == "completed"
    assert [(e.kind, e.tool, e.plugin, e.prompt_tokens, e.completion_tokens) for e in entries] == [
        ("model", "", "", 30, 10),
        ("tool", "forecast", "weather", 0, 0),
        ("model", "", "", 50, 5),
    ]
    assert {(e.run_id, e.thread_id, e.user_id) for e in entries} == {(result.run_id, "t1", "ann")}
    assert entries[0].cost is None  # the fake model has no price: unknown, not 0


async def test_a_user_over_the_day_token_budget_is_stopped_before_the_model_is_called(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(Reply(content="one", usage=(80, 40)), Reply(content="two", usage=(1, 1)))
    oracle = make_oracle(settings=settings_with(tmp_path, "user_day_tokens = 100"))

    first = await oracle.run("t1", "hi", user_id="ann")
    second = await oracle.run("t2", "hi again", user_id="ann")

    assert first.status == "completed"
    assert second.status == "failed"
    assert second.error is not None
    assert "budget user_day_tokens of user 'ann' is spent: 120 of 100 tokens" in second.error
    assert len(fake_openai.requests) == 1  # the second run never reached the model


async def test_another_user_spends_from_a_budget_of_their_own(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(Reply(content="one", usage=(80, 40)), Reply(content="two", usage=(1, 1)))
    oracle = make_oracle(settings=settings_with(tmp_path, "user_day_requests = 1"))

    await oracle.run("t1", "hi", user_id="ann")
    other = await oracle.run("t2", "hi", user_id="bob")

    assert other.status == "completed"


async def test_a_thread_budget_stops_that_thread_only(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(*[Reply(content="ok", usage=(5, 5)) for _ in range(3)])
    oracle = make_oracle(settings=settings_with(tmp_path, "thread_day_requests = 1"))

    await oracle.run("t1", "hi")
    again = await oracle.run("t1", "hi")
    elsewhere = await oracle.run("t2", "hi")

    assert again.status == "failed"
    assert again.error is not None and "budget thread_day_requests of thread 't1'" in again.error
    assert elsewhere.status == "completed"


async def test_the_budget_error_carries_its_scope_window_limit_and_figure(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(Reply(content="ok", usage=(5, 5)))
    oracle = make_oracle(settings=settings_with(tmp_path, "user_month_tokens = 10"))
    await oracle.run("t1", "hi", user_id="ann")
    guard = budget_guard_of(oracle, await oracle.run_deps())
    from oracle_core.run.state import RunState

    state = RunState.new("t9", "hi", user_id="ann")

    with pytest.raises(BudgetExceededError) as caught:
        await guard.before_model(state, 1)

    error = caught.value
    assert (error.scope, error.key, error.window, error.measure) == (
        "user",
        "ann",
        "month",
        "tokens",
    )
    assert (error.limit, error.spent) == (10.0, 10.0)


async def test_a_cost_budget_lets_a_model_without_a_price_run_and_says_so_once(
    make_oracle: MakeOracle,
    fake_openai: FakeOpenAI,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # docs/usage.md's example on a local model: its cost is unknown, so it spends nothing
    # from a cost budget (the token budget beside it still holds it).
    fake_openai.script(*[Reply(content="ok", usage=(60, 10)) for _ in range(2)])
    budgets = "user_day_tokens = 100\nuser_month_cost = 5.0"
    oracle = make_oracle(settings=settings_with(tmp_path, budgets))

    with caplog.at_level(logging.WARNING, "oracle_core"):
        first = await oracle.run("t1", "hi", user_id="ann")
        second = await oracle.run("t2", "hi", user_id="ann")
        third = await oracle.run("t3", "hi", user_id="ann")

    said = [r.getMessage() for r in caplog.records if "has no price" in r.getMessage()]
    assert (first.status, second.status) == ("completed", "completed")
    assert third.status == "failed" and "user_day_tokens" in (third.error or "")
    assert len(said) == 1, said
    assert "its calls spend nothing from the cost budget user_month_cost" in said[0]


def budget_guard_of(oracle: object, deps: object) -> BudgetGuard:
    [guard] = [g for g in deps.guards.members if isinstance(g, BudgetGuard)]  # type: ignore[attr-defined]
    return guard


async def test_a_failed_model_call_lets_go_of_the_budget_for_the_next_run(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(Reply(status=400, content="bad request"), Reply(content="ok", usage=(1, 1)))
    settings = settings_with(tmp_path, "user_day_tokens = 100\nhold_seconds = 600")
    oracle = make_oracle(settings=settings)

    failed = await oracle.run("t1", "hi", user_id="ann")
    after = await oracle.run("t2", "hi", user_id="ann")

    assert failed.status == "failed"
    assert after.status == "completed"  # not held for hold_seconds (600 s)


async def test_when_the_task_of_a_failed_call_ends_another_process_may_take_the_budget(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(Reply(status=400, content="bad request"))
    settings = settings_with(tmp_path, "user_day_tokens = 100\nhold_seconds = 600")
    oracle = make_oracle(settings=settings)
    guard = budget_guard_of(oracle, await oracle.run_deps())

    failed = await asyncio.create_task(oracle.run("t1", "hi", user_id="ann"))
    for _ in range(100):  # loop turns for the task's done callback and its release
        if not guard._held and not guard._letting_go:
            break
        await asyncio.sleep(0)

    assert failed.status == "failed"
    assert await oracle.checkpointer.acquire("\x00budget\x00user\x00ann", "another", 5.0)
