"""What the audit middleware records, and that recording never breaks a run."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from importlib.metadata import entry_points

import oracle_plugin_audit
import pytest

from oracle_core import Oracle
from oracle_core.testing import OracleFactory, ScriptedModel, check_plugin, run_turn

OracleMaker = Callable[[], Oracle]


def store(oracle: Oracle) -> oracle_plugin_audit.AuditStore:
    found = oracle_plugin_audit.store_of(oracle)
    assert found is not None
    return found


def test_conforms() -> None:
    check_plugin(oracle_plugin_audit)


def test_plugin_is_silent_with_middleware_routes_and_no_tools(oracle: Oracle) -> None:
    plugin = oracle.registry.plugins["audit"]

    assert plugin.visibility == "silent"
    assert plugin.tools == []
    assert [type(m).__name__ for m in plugin.middleware] == ["AuditMiddleware"]
    assert [r.path for r in plugin.routes] == [
        "/calls",
        "/tools",
        "/threads/{thread_id}",
        "/summary",
    ]
    assert not any(r.public for r in plugin.routes)
    assert oracle.tier1_block == ""


async def test_a_failed_model_call_is_recorded_with_its_error(
    oracle: Oracle, oracle_model: ScriptedModel
) -> None:
    oracle_model.reply_error(500, "provider down")

    await run_turn(oracle, "hello", thread="t1", expect="failed")

    [call] = store(oracle).model_calls("t1")
    assert call["error"] is not None and "provider down" in call["error"]
    assert call["error"].startswith("ModelError: ")
    assert (call["prompt_tokens"], call["completion_tokens"]) == (None, None)
    assert store(oracle).summary()["threads"][0]["model_errors"] == 1


async def test_a_failing_tool_is_recorded_as_an_error_not_a_refusal(
    oracle: Oracle, oracle_model: ScriptedModel
) -> None:
    oracle_model.reply_tool_call("load_capability", {"names": ["dice"]})
    oracle_model.reply_tool_call("roll", {"sides": 1})
    oracle_model.reply_text("Sorry.")

    await run_turn(oracle, "roll a one-sided die", thread="t1")

    [failed] = store(oracle).tool_calls("t1", refused=False, limit=1)
    assert (failed["name"], failed["refused"], failed["is_error"]) == ("roll", False, True)
    assert failed["error"] == "a die needs at least 2 sides, not 1"
    assert store(oracle).summary()["threads"][0]["tool_errors"] == 1


async def test_parallel_tool_calls_are_each_recorded(
    oracle: Oracle, oracle_model: ScriptedModel
) -> None:
    oracle_model.reply_tool_call("load_capability", {"names": ["dice"]})
    oracle_model.reply_tool_calls([("roll", {"sides": 6}), ("roll", {"sides": 20})])
    oracle_model.reply_text("4 and 4.")

    await run_turn(oracle, "roll two dice", thread="t1")

    rolls = [c for c in store(oracle).tool_calls("t1") if c["name"] == "roll"]
    assert sorted(c["arguments"]["sides"] for c in rolls) == [6, 20]
    assert len({c["call_id"] for c in rolls}) == 2
    assert all(c["latency_ms"] >= 0 and not c["is_error"] for c in rolls)


async def test_arguments_that_are_not_json_are_kept_as_written(
    oracle: Oracle, oracle_model: ScriptedModel
) -> None:
    oracle_model.reply_tool_call("roll", "{sides: six").reply_text("Hm.")

    await run_turn(oracle, "roll", thread="t1")

    [call] = store(oracle).tool_calls("t1")
    assert call["arguments"] == "{sides: six"


async def test_every_thread_is_recorded_separately(
    oracle: Oracle, oracle_model: ScriptedModel
) -> None:
    oracle_model.reply_text("One.").reply_text("Two.").reply_text("Three.")

    await run_turn(oracle, "1", thread="a")
    await run_turn(oracle, "2", thread="b")
    await run_turn(oracle, "3", thread="a")

    assert len(store(oracle).model_calls("a")) == 2
    assert len(store(oracle).model_calls("b")) == 1
    assert len(store(oracle).model_calls()) == 3
    assert [t["thread_id"] for t in store(oracle).summary()["threads"]] == ["a", "b"]


async def test_a_broken_audit_table_never_breaks_a_run(
    oracle: Oracle,
    oracle_factory: OracleFactory,
    oracle_model: ScriptedModel,
    caplog: pytest.LogCaptureFixture,
) -> None:
    oracle_factory.home.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(oracle_factory.home / "oracle.db") as db:
        db.executescript("CREATE TABLE audit_model_calls (x); CREATE TABLE audit_tool_calls (x);")
    oracle_model.reply_tool_call("load_capability", {"names": ["dice"]})
    oracle_model.reply_tool_call("roll", {"sides": 6})
    oracle_model.reply_text("You rolled a 4.")

    with caplog.at_level(logging.WARNING, logger="oracle_plugin_audit"):
        result = await run_turn(oracle, "roll a die", thread="t1")

    assert result.answer == "You rolled a 4."
    warnings = [r.getMessage() for r in caplog.records if r.name == "oracle_plugin_audit"]
    assert len(warnings) == 5  # three model calls, two tool calls
    assert all("could not record" in w and "'t1'" in w for w in warnings)


def test_building_an_oracle_does_not_open_the_database(
    make_oracle: OracleMaker, oracle_factory: OracleFactory
) -> None:
    make_oracle()

    assert not (oracle_factory.home / "oracle.db").exists()


async def test_closing_the_oracle_closes_the_audit_connection(
    oracle: Oracle, oracle_factory: OracleFactory, oracle_model: ScriptedModel
) -> None:
    oracle_model.reply_text("Hi.")
    await run_turn(oracle, "hello", thread="t1")
    assert store(oracle).is_open

    await oracle.close()

    assert not store(oracle).is_open
    # SQLite removes the write-ahead log with the last connection.
    assert not (oracle_factory.home / "oracle.db-wal").exists()


async def test_the_trail_outlives_the_oracle(
    make_oracle: OracleMaker, oracle_model: ScriptedModel
) -> None:
    oracle_model.reply_text("Hi.")
    first = make_oracle()
    await run_turn(first, "hello", thread="t1")
    await first.close()

    second = make_oracle()
    await second.start()

    assert len(store(second).model_calls("t1")) == 1


def test_each_oracle_has_its_own_store(make_oracle: OracleMaker) -> None:
    assert store(make_oracle()) is not store(make_oracle())


def test_installed_distribution_registers_the_entry_point() -> None:
    [entry] = entry_points(group="oracle.plugins", name="audit")

    assert entry.dist is not None and entry.dist.name == "oracle-plugin-audit"
    assert entry.load().oracle_manifest().name == "audit"
