"""The system prompt and its Tier-1 block."""

from __future__ import annotations

from support import CodePlugin

from oracle_core import Example, Oracle, Settings
from oracle_core.capabilities.prompt import DEFAULT_INSTRUCTIONS

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
