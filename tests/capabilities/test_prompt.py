"""The system prompt and its Tier-1 block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import CodePlugin

from oracle_core import Example, Oracle, Settings
from oracle_core.capabilities.prompt import DEFAULT_INSTRUCTIONS, tier1_warning
from oracle_core.oracle import TIER1_COUNTS
from oracle_core.plugins.registry import Plugin
from oracle_core.values.count_memo import KEEP, CountMemo
from oracle_core.values.tokens import count_tokens

GOLDEN = """## Available Capabilities

- **memory** — Durable memory across conversations.
  - When to use: user refers to something from a past chat; you learn a durable fact
  - Avoid for: one-off lookups that don't need to persist
  - Example: "remember I prefer metric units" → save_memory({"text":"prefers metric"})

For more capabilities, call `list_capabilities()` to see what else is available,
then `load_capability({ names: ["cap1", "cap2"] })` to make their tools available in one call."""


def memory_plugin() -> CodePlugin:
    return CodePlugin(
        "memory",
        visibility="always",
        tools=("save_memory",),
        summary="Durable memory across conversations.",
        when_to_use=[
            "user refers to something from a past chat",
            "you learn a durable fact",
            "a third line",
        ],
        when_not_to_use=["one-off lookups that don't need to persist", "another"],
        examples=[
            Example(
                user="remember I prefer metric units",
                tool="save_memory",
                args={"text": "prefers metric"},
            ),
            Example(user="remember my name", tool="save_memory", args={"text": "name"}),
        ],
    )


def oracle(*plugins: CodePlugin, **env: str) -> Oracle:
    return Oracle(
        list(plugins),
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": "/nonexistent", **env}),
    )


def plugins_of(*plugins: CodePlugin) -> list[Plugin]:
    return list(oracle(*plugins).registry)


def test_tier1_block_matches_the_design_byte_for_byte() -> None:
    assert oracle(memory_plugin(), CodePlugin("weather")).tier1_block == GOLDEN


def test_system_prompt_is_instructions_then_the_tier1_block() -> None:
    assert oracle(memory_plugin()).system_prompt == f"{DEFAULT_INSTRUCTIONS}\n\n{GOLDEN}"


def test_no_block_without_an_always_plugin() -> None:
    built = oracle(CodePlugin("weather"), CodePlugin("audit", visibility="silent"))

    assert built.tier1_block == ""
    assert built.system_prompt == DEFAULT_INSTRUCTIONS


def test_entries_are_sorted_by_name_and_optional_lines_are_left_out() -> None:
    block = oracle(
        CodePlugin("zeta", visibility="always"), CodePlugin("alpha", visibility="always")
    ).tier1_block

    entries = [line for line in block.splitlines() if line.startswith("- ")]
    assert entries == ["- **alpha** — The alpha plugin.", "- **zeta** — The zeta plugin."]
    assert "Avoid for" not in block
    assert "Example" not in block


def test_over_budget_the_warning_names_the_three_most_expensive_always_plugins() -> None:
    plugins = [
        CodePlugin(name, visibility="always", summary="word " * size)
        for name, size in [("small", 2), ("big", 20), ("bigger", 22), ("biggest", 23)]
    ]

    warning = oracle(*plugins, ORACLE_TIER1_BUDGET="50").tier1_warning()

    assert warning is not None
    assert "over the budget of 50" in warning
    named = warning.split("most expensive always plugins: ")[1]
    assert [part.split(" (")[0] for part in named.split(", ")[:3]] == ["biggest", "bigger", "big"]
    assert "small" not in warning


def test_within_budget_there_is_no_warning() -> None:
    assert oracle(memory_plugin()).tier1_warning() is None


# -- the Tier-1 count, remembered across starts ---------------------------------------------


def over_budget(home: Path, *names: str) -> Oracle:
    plugins = [CodePlugin(n, visibility="always", summary="word " * 30) for n in names]
    settings = Settings.from_env({"ORACLE_HOME": str(home), "ORACLE_TIER1_BUDGET": "50"})
    return Oracle(plugins, entry_points=False, settings=settings)


def test_the_warning_counts_the_block_once_and_reads_the_count_at_the_next_start(
    tmp_path: Path,
) -> None:
    first = over_budget(tmp_path, "a", "b")
    expected = count_tokens(first.tier1_block)
    memo = tmp_path / "cache" / TIER1_COUNTS

    warning = first.tier1_warning()
    assert warning is not None and f"costs {expected} tokens" in warning
    assert list(json.loads(memo.read_text()).values()) == [expected]

    def refuse(text: str) -> int:
        raise AssertionError("an unchanged block was counted again")

    again = over_budget(tmp_path, "a", "b")
    assert CountMemo(memo, refuse).count(again.tier1_block) == expected
    assert again.tier1_warning() == warning


def test_a_changed_block_is_counted_again(tmp_path: Path) -> None:
    over_budget(tmp_path, "a").tier1_warning()
    changed = over_budget(tmp_path, "a", "c")

    warning = changed.tier1_warning()

    assert warning is not None
    assert f"costs {count_tokens(changed.tier1_block)} tokens" in warning


def test_a_block_of_no_more_bytes_than_the_budget_is_never_counted(tmp_path: Path) -> None:
    def refuse(text: str) -> int:
        raise AssertionError("a block within the budget in bytes was counted")

    plugins = [CodePlugin("a", visibility="always", summary="s")]
    block = oracle(*plugins).tier1_block
    memo = CountMemo(tmp_path / "counts.json", refuse)

    assert tier1_warning(plugins_of(*plugins), len(block.encode()), memo) is None
    with pytest.raises(AssertionError, match="was counted"):
        tier1_warning(plugins_of(*plugins), len(block.encode()) - 1, memo)


BROKEN_MEMOS = [
    b"",
    b"\xff\xfe not json",
    b"[1, 2, 3]",
    b'"a string"',
    b"null",
    b'{"k": true}',
    b'{"k": 1.5}',
    b'{"k": -3}',
    b'{"k": "12"}',
    b'{"k": [1]}',
    b"{" * 5000,
]


@pytest.mark.parametrize("content", BROKEN_MEMOS)
def test_a_broken_memo_is_counted_over_and_replaced(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "counts.json"
    path.write_bytes(content)
    text = "some block of text, to be counted"

    assert CountMemo(path).count(text) == count_tokens(text)
    assert list(json.loads(path.read_text()).values()) == [count_tokens(text)]


def test_a_memo_that_cannot_be_written_still_counts(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")

    assert CountMemo(blocker / "cache" / "counts.json").count("hello there") == count_tokens(
        "hello there"
    )


def test_a_memo_whose_home_does_not_exist_makes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "no-home"

    assert CountMemo(home / "cache" / "counts.json").count("hello there") == count_tokens(
        "hello there"
    )
    assert not home.exists()


def test_the_memo_keeps_only_the_newest_counts(tmp_path: Path) -> None:
    path = tmp_path / "counts.json"
    memo = CountMemo(path)
    texts = [f"text number {i}" for i in range(KEEP + 5)]
    for text in texts:
        memo.count(text)

    kept = json.loads(path.read_text())
    assert len(kept) == KEEP
    assert list(kept.values()) == [count_tokens(t) for t in texts[-KEEP:]]
