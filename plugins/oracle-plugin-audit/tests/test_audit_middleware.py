"""What the audit middleware records, and that recording never breaks a run."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

import oracle_plugin_audit
import pytest

from oracle_core import Oracle
from oracle_core.testing.openai_server import FakeOpenAI, Reply

OracleMaker = Callable[..., Oracle]


def store(oracle: Oracle) -> oracle_plugin_audit.AuditStore:
    found = oracle_plugin_audit.store_of(oracle)
    assert found is not None
    return found


def test_plugin_is_silent_with_middleware_routes_and_no_tools(oracle: Oracle) -> None:
    plugin = oracle.registry.plugins["audit"]

    assert oracle.registry.warnings == []
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
    oracle: Oracle, fake: FakeOpenAI
) -> None:
    fake.script(Reply.error(500, "provider down"))

    result = await oracle.run("t1", "hello")

    assert result.status == "failed"
    [call] = store(oracle).model_calls("t1")
    assert call["error"] is not None and "provider down" in call["error"]
    assert call["error"].startswith("ModelError: ")
    assert (call["prompt_tokens"], call["completion_tokens"]) == (None, None)
    assert store(oracle).summary()["threads"][0]["model_errors"] == 1


async def test_a_failing_tool_is_recorded_as_an_error_not_a_refusal(
    oracle: Oracle, fake: FakeOpenAI
) -> None:
    fake.script(
        Reply.call("load_capability", {"names": ["dice"]}),
        Reply.call("roll", {"sides": 1}),
        Reply.text("Sorry."),
    )

    await oracle.run("t1", "roll a one-sided die")

    [failed] = store(oracle).tool_calls("t1", refused=False, limit=1)
    assert (failed["name"], failed["refused"], failed["is_error"]) == ("roll", False, True)
    assert failed["error"] == "a die needs at least 2 sides, not 1"
    assert store(oracle).summary()["threads"][0]["tool_errors"] == 1


async def test_parallel_tool_calls_are_each_recorded(oracle: Oracle, fake: FakeOpenAI) -> None:
    fake.script(
        Reply.call("load_capability", {"names": ["dice"]}),
        Reply.calls(("roll", {"sides": 6}), ("roll", {"sides": 20})),
        Reply.text("4 and 4."),
    )

    await oracle.run("t1", "roll two dice")

    rolls = [c for c in store(oracle).tool_calls("t1") if c["name"] == "roll"]
    assert sorted(c["arguments"]["sides"] for c in rolls) == [6, 20]
    assert len({c["call_id"] for c in rolls}) == 2
    assert all(c["latency_ms"] >= 0 and not c["is_error"] for c in rolls)


async def test_arguments_that_are_not_json_are_kept_as_written(
    oracle: Oracle, fake: FakeOpenAI
) -> None:
    fake.script(Reply.call("roll", "{sides: six"), Reply.text("Hm."))

    await oracle.run("t1", "roll")

    [call] = store(oracle).tool_calls("t1")
    assert call["arguments"] == "{sides: six"


async def test_every_thread_is_recorded_separately(oracle: Oracle, fake: FakeOpenAI) -> None:
    fake.script(Reply.text("One."), Reply.text("Two."), Reply.text("Three."))

    await oracle.run("a", "1")
    await oracle.run("b", "2")
    await oracle.run("a", "3")

    assert len(store(oracle).model_calls("a")) == 2
    assert len(store(oracle).model_calls("b")) == 1
    assert len(store(oracle).model_calls()) == 3
    assert [t["thread_id"] for t in store(oracle).summary()["threads"]] == ["a", "b"]


async def test_a_broken_audit_table_never_breaks_a_run(
    oracle: Oracle, fake: FakeOpenAI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with sqlite3.connect(tmp_path / "oracle.db") as db:
        db.executescript("CREATE TABLE audit_model_calls (x); CREATE TABLE audit_tool_calls (x);")
    fake.script(
        Reply.call("load_capability", {"names": ["dice"]}),
        Reply.call("roll", {"sides": 6}),
        Reply.text("You rolled a 4."),
    )

    with caplog.at_level(logging.WARNING, logger="oracle_plugin_audit"):
        result = await oracle.run("t1", "roll a die")

    assert (result.status, result.answer) == ("completed", "You rolled a 4.")
    warnings = [r.getMessage() for r in caplog.records if r.name == "oracle_plugin_audit"]
    assert len(warnings) == 5  # three model calls, two tool calls
    assert all("could not record" in w and "'t1'" in w for w in warnings)


def test_building_an_oracle_does_not_open_the_database(oracle: Oracle, tmp_path: Path) -> None:
    assert not (tmp_path / "oracle.db").exists()


async def test_closing_the_oracle_closes_the_audit_connection(
    oracle: Oracle, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.script(Reply.text("Hi."))
    await oracle.run("t1", "hello")
    assert store(oracle).is_open

    await oracle.close()

    assert not store(oracle).is_open
    assert not (tmp_path / "oracle.db-wal").exists()  # SQLite removes it with the last connection


async def test_the_trail_outlives_the_oracle(make_oracle: OracleMaker, fake: FakeOpenAI) -> None:
    fake.script(Reply.text("Hi."))
    first = make_oracle()
    await first.run("t1", "hello")
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


def test_plugin_passes_the_oracle_core_conformance_check() -> None:
    conformance = pytest.importorskip("oracle_core.testing.conformance")

    conformance.check_plugin(oracle_plugin_audit)
