"""The memory plugin as the core and the model see it: manifest, Tier-1 entry, runs, storage."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import oracle_plugin_memory
import pytest

from oracle_core import Oracle
from oracle_core.prompt import tier1_entry
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.tokens import count_tokens

Call = Callable[..., Awaitable[Any]]
OracleMaker = Callable[..., Oracle]
MEMORY_TOOLS = ["save_memory", "search_memory", "list_memories", "forget_memory"]


def test_plugin_assembles_without_failures_or_warnings(make_oracle: OracleMaker) -> None:
    oracle = make_oracle()

    assert oracle.registry.failures == []
    assert oracle.registry.warnings == []
    plugin = oracle.registry.plugins["memory"]
    assert plugin.visibility == "always"
    assert [t.name for t in plugin.tools] == MEMORY_TOOLS


def test_tier1_entry_stays_within_80_tokens(make_oracle: OracleMaker) -> None:
    entry = tier1_entry(make_oracle().registry.plugins["memory"])

    assert count_tokens(entry) <= 80, entry
    assert entry.splitlines() == [
        "- **memory** — Durable memory across conversations.",
        "  - When to use: the user refers to an earlier conversation; "
        "you learn a lasting fact or preference",
        "  - Avoid for: details that only matter in this conversation",
        '  - Example: "remember I prefer metric units" → '
        'save_memory({"text":"prefers metric units"})',
    ]


def test_tool_schemas_hide_the_user_and_context(make_oracle: OracleMaker) -> None:
    tools = make_oracle().registry.plugins["memory"].tools
    properties = {t.name: set(t.parameters["properties"]) for t in tools}

    assert properties == {
        "save_memory": {"text", "tags"},
        "search_memory": {"query", "limit"},
        "list_memories": {"limit"},
        "forget_memory": {"id"},
    }


async def test_model_sees_the_entry_and_tools_without_loading_anything(
    make_oracle: OracleMaker, fake: FakeOpenAI
) -> None:
    fake.script(Reply.text("Hello."))

    await make_oracle().run("t1", "hi")

    [request] = fake.requests
    assert "- **memory** — Durable memory across conversations." in request.system_prompt
    assert request.tool_names == ["list_capabilities", "load_capability", *MEMORY_TOOLS]


async def test_a_fact_saved_in_one_conversation_is_recalled_in_another(
    make_oracle: OracleMaker, fake: FakeOpenAI
) -> None:
    fake.script(
        Reply.call("save_memory", {"text": "prefers metric units"}),
        Reply.text("Noted."),
        Reply.call("search_memory", {"query": "units"}),
        Reply.text("You prefer metric units."),
    )
    oracle = make_oracle()

    await oracle.run("monday", "remember I prefer metric units", user_id="alice")
    result = await oracle.run("friday", "which units do I like?", user_id="alice")

    assert result.answer == "You prefer metric units."
    recalled = json.loads(fake.requests[3].messages[-1]["content"])
    assert [m["text"] for m in recalled["memories"]] == ["prefers metric units"]


async def test_another_user_asking_the_model_recalls_nothing(
    make_oracle: OracleMaker, fake: FakeOpenAI
) -> None:
    fake.script(
        Reply.call("save_memory", {"text": "alice lives in Leeds"}),
        Reply.text("Noted."),
        Reply.call("search_memory", {"query": "alice Leeds"}),
        Reply.text("I don't know."),
    )
    oracle = make_oracle()

    await oracle.run("a", "remember I live in Leeds", user_id="alice")
    await oracle.run("b", "where does alice live?", user_id="bob")

    recalled = json.loads(fake.requests[3].messages[-1]["content"])
    assert recalled["memories"] == []


async def test_memories_outlive_the_oracle(make_oracle: OracleMaker, call: Call) -> None:
    first = make_oracle()
    await call(first, "save_memory", {"text": "lives in Leeds"})
    await first.close()

    found = await call(make_oracle(), "search_memory", {"query": "Leeds"})

    assert [m["text"] for m in found["memories"]] == ["lives in Leeds"]


async def test_memories_live_in_the_oracles_own_database(
    make_oracle: OracleMaker, call: Call, tmp_path: Path
) -> None:
    oracle = make_oracle()
    await call(oracle, "save_memory", {"text": "lives in Leeds"}, user="alice")

    with sqlite3.connect(tmp_path / "oracle.db") as db:
        rows = db.execute("SELECT user_id, text FROM memory_items").fetchall()
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        (mode,) = db.execute("PRAGMA journal_mode").fetchone()

    assert rows == [("alice", "lives in Leeds")]
    ours = {t for t in tables if not t.startswith("oracle_")} - {"sqlite_sequence"}
    assert ours and all(t.startswith("memory_") for t in ours), ours
    assert mode == "wal"


def test_building_an_oracle_does_not_open_the_database(
    make_oracle: OracleMaker, tmp_path: Path
) -> None:
    make_oracle()

    assert not (tmp_path / "oracle.db").exists()


async def test_closing_the_oracle_closes_the_memory_connection(
    make_oracle: OracleMaker, call: Call, tmp_path: Path
) -> None:
    oracle = make_oracle()
    await call(oracle, "save_memory", {"text": "lives in Leeds"})
    store = oracle_plugin_memory.store_of(oracle)
    assert store is not None and store.is_open

    await oracle.close()

    assert not store.is_open
    assert not (tmp_path / "oracle.db-wal").exists()  # SQLite removes it with the last connection


async def test_each_oracle_has_its_own_connection(make_oracle: OracleMaker, call: Call) -> None:
    one, two = make_oracle(), make_oracle()

    await call(one, "save_memory", {"text": "lives in Leeds"})
    found = await call(two, "search_memory", {"query": "Leeds"})

    assert oracle_plugin_memory.store_of(one) is not oracle_plugin_memory.store_of(two)
    assert len(found["memories"]) == 1


def test_installed_distribution_registers_the_entry_point() -> None:
    [entry] = entry_points(group="oracle.plugins", name="memory")

    assert entry.dist is not None and entry.dist.name == "oracle-plugin-memory"
    assert entry.load().oracle_manifest().name == "memory"


def test_plugin_passes_the_oracle_core_conformance_check() -> None:
    conformance = pytest.importorskip("oracle_core.testing.conformance")

    conformance.check_plugin(oracle_plugin_memory, tier1_budget=80)
