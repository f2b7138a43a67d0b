"""The memory plugin as the core and the model see it: manifest, Tier-1 entry, runs, storage."""

from __future__ import annotations

import json
import sqlite3
from importlib.metadata import entry_points

import oracle_plugin_memory

from oracle_core import Oracle
from oracle_core.capabilities.prompt import tier1_entry
from oracle_core.testing import (
    OracleFactory,
    ScriptedModel,
    assert_shown,
    assert_tool_called,
    call_tool,
    check_plugin,
    run_turn,
)

MEMORY_TOOLS = ["save_memory", "search_memory", "list_memories", "forget_memory"]


def test_conforms() -> None:
    check_plugin(oracle_plugin_memory, tier1_budget=80)


def test_tier1_entry_shows_when_to_use_memory_and_an_example(oracle: Oracle) -> None:
    entry = tier1_entry(oracle.registry.plugins["memory"])

    assert entry.splitlines() == [
        "- **memory** — Durable memory across conversations.",
        "  - When to use: the user refers to an earlier conversation; "
        "you learn a lasting fact or preference",
        "  - Avoid for: details that only matter in this conversation",
        '  - Example: "remember I prefer metric units" → '
        'save_memory({"text":"prefers metric units"})',
    ]


def test_tool_schemas_hide_the_user_and_context(oracle: Oracle) -> None:
    tools = oracle.registry.plugins["memory"].tools
    properties = {t.name: set(t.parameters["properties"]) for t in tools}

    assert properties == {
        "save_memory": {"text", "tags"},
        "search_memory": {"query", "limit"},
        "list_memories": {"limit"},
        "forget_memory": {"id"},
    }


async def test_model_sees_the_entry_and_tools_without_loading_anything(
    oracle: Oracle, oracle_model: ScriptedModel
) -> None:
    oracle_model.reply_text("Hello.")

    await run_turn(oracle, "hi")

    first = oracle_model.request(1)
    assert_shown(first, prompt="- **memory** — Durable memory across conversations.")
    assert first.tool_names == [
        "list_capabilities",
        "load_capability",
        "search_capabilities",
        *MEMORY_TOOLS,
    ]


async def test_a_fact_saved_in_one_conversation_is_recalled_in_another(
    oracle: Oracle, oracle_model: ScriptedModel
) -> None:
    oracle_model.reply_tool_call("save_memory", {"text": "prefers metric units"})
    oracle_model.reply_text("Noted.")
    oracle_model.reply_tool_call("search_memory", {"query": "units"})
    oracle_model.reply_text("You prefer metric units.")

    await run_turn(oracle, "remember I prefer metric units", thread="monday", user_id="alice")
    result = await run_turn(oracle, "which units do I like?", thread="friday", user_id="alice")

    assert result.answer == "You prefer metric units."
    recalled = json.loads(assert_tool_called(result, "search_memory").content)
    assert [m["text"] for m in recalled["memories"]] == ["prefers metric units"]


async def test_another_user_asking_the_model_recalls_nothing(
    oracle: Oracle, oracle_model: ScriptedModel
) -> None:
    oracle_model.reply_tool_call("save_memory", {"text": "alice lives in Leeds"})
    oracle_model.reply_text("Noted.")
    oracle_model.reply_tool_call("search_memory", {"query": "alice Leeds"})
    oracle_model.reply_text("I don't know.")

    await run_turn(oracle, "remember I live in Leeds", thread="a", user_id="alice")
    result = await run_turn(oracle, "where does alice live?", thread="b", user_id="bob")

    recalled = json.loads(assert_tool_called(result, "search_memory").content)
    assert recalled["memories"] == []


async def test_memories_outlive_the_oracle(oracle_factory: OracleFactory) -> None:
    first = oracle_factory(oracle_plugin_memory)
    await call_tool(first, "save_memory", {"text": "lives in Leeds"})
    await first.close()

    found = await call_tool(
        oracle_factory(oracle_plugin_memory), "search_memory", {"query": "Leeds"}
    )

    assert [m["text"] for m in found["memories"]] == ["lives in Leeds"]


async def test_memories_live_in_the_oracles_own_database(
    oracle: Oracle, oracle_factory: OracleFactory
) -> None:
    await call_tool(oracle, "save_memory", {"text": "lives in Leeds"}, user_id="alice")

    with sqlite3.connect(oracle_factory.home / "oracle.db") as db:
        rows = db.execute("SELECT user_id, text FROM memory_items").fetchall()
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        (mode,) = db.execute("PRAGMA journal_mode").fetchone()

    assert rows == [("alice", "lives in Leeds")]
    ours = {t for t in tables if not t.startswith("oracle_")} - {"sqlite_sequence"}
    assert ours and all(t.startswith("memory_") for t in ours), ours
    assert mode == "wal"


def test_building_an_oracle_does_not_open_the_database(oracle_factory: OracleFactory) -> None:
    oracle_factory(oracle_plugin_memory)

    assert not (oracle_factory.home / "oracle.db").exists()


async def test_closing_the_oracle_closes_the_memory_connection(
    oracle: Oracle, oracle_factory: OracleFactory
) -> None:
    await call_tool(oracle, "save_memory", {"text": "lives in Leeds"})
    store = oracle_plugin_memory.store_of(oracle)
    assert store is not None and store.is_open

    await oracle.close()

    assert not store.is_open
    # SQLite removes the write-ahead log with the last connection.
    assert not (oracle_factory.home / "oracle.db-wal").exists()


async def test_each_oracle_has_its_own_connection(oracle_factory: OracleFactory) -> None:
    one, two = oracle_factory(oracle_plugin_memory), oracle_factory(oracle_plugin_memory)

    await call_tool(one, "save_memory", {"text": "lives in Leeds"})
    found = await call_tool(two, "search_memory", {"query": "Leeds"})

    assert oracle_plugin_memory.store_of(one) is not oracle_plugin_memory.store_of(two)
    assert len(found["memories"]) == 1


def test_installed_distribution_registers_the_entry_point() -> None:
    [entry] = entry_points(group="oracle.plugins", name="memory")

    assert entry.dist is not None and entry.dist.name == "oracle-plugin-memory"
    assert entry.load().oracle_manifest(None).name == "memory"
