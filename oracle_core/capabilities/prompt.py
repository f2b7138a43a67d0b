"""The system prompt, and the Tier-1 block that advertises ``always`` plugins."""

from __future__ import annotations

import json
from collections.abc import Iterable

from oracle_core.plugins.registry import Plugin
from oracle_core.values.count_memo import CountMemo
from oracle_core.values.tokens import count_tokens

DEFAULT_INSTRUCTIONS = (
    "You are a helpful assistant. Use the tools you are given when they help; "
    "answer directly when they do not."
)
"""The system prompt's opening when an oracle is not given its own instructions."""

TIER1_HEADER = "## Available Capabilities"
TIER1_FOOTER = (
    "For more capabilities, call `list_capabilities()` to see what else is available,\n"
    'then `load_capability({ names: ["cap1", "cap2"] })` to make their tools available in one call.'
)


def tier1_entry(plugin: Plugin) -> str:
    """One plugin's entry in the Tier-1 block."""
    manifest = plugin.manifest
    lines = [f"- **{manifest.name}** — {manifest.summary}"]
    if manifest.when_to_use:
        lines.append(f"  - When to use: {'; '.join(manifest.when_to_use[:2])}")
    if manifest.when_not_to_use:
        lines.append(f"  - Avoid for: {manifest.when_not_to_use[0]}")
    if manifest.examples:
        example = manifest.examples[0]
        args = json.dumps(example.args, separators=(",", ":"), ensure_ascii=False)
        lines.append(f'  - Example: "{example.user}" → {example.tool}({args})')
    return "\n".join(lines)


def tier1_block(plugins: Iterable[Plugin]) -> str:
    """The Tier-1 block for the ``always`` plugins among ``plugins`` ("" when there are none).

    Entries are sorted by name. The cost of on-demand plugins is zero: they never appear.
    """
    always = sorted((p for p in plugins if p.visibility == "always"), key=lambda p: p.name)
    if not always:
        return ""
    entries = "\n".join(tier1_entry(p) for p in always)
    return f"{TIER1_HEADER}\n\n{entries}\n\n{TIER1_FOOTER}"


def system_prompt(instructions: str, block: str) -> str:
    """The system prompt: the oracle's instructions, then the Tier-1 block if there is one."""
    return f"{instructions}\n\n{block}" if block else instructions


def tier1_costs(plugins: Iterable[Plugin]) -> list[tuple[str, int]]:
    """Tokens each ``always`` plugin adds to the Tier-1 block, most expensive first."""
    costs = [(p.name, count_tokens(tier1_entry(p))) for p in plugins if p.visibility == "always"]
    return sorted(costs, key=lambda c: -c[1])


def tier1_warning(
    plugins: Iterable[Plugin], budget: int, memo: CountMemo | None = None
) -> str | None:
    """A warning when the Tier-1 block of ``plugins`` costs more than ``budget`` tokens.

    ``memo`` remembers the block's count across starts (see
    :mod:`oracle_core.values.count_memo`): an unchanged block is not counted again. A block
    of no more bytes than ``budget`` is never counted: a token is at least one byte.
    """
    plugins = list(plugins)
    block = tier1_block(plugins)
    if not block or len(block.encode()) <= budget:
        return None
    cost = (memo or CountMemo(None)).count(block)
    if cost <= budget:
        return None
    worst = ", ".join(f"{name} ({n} tokens)" for name, n in tier1_costs(plugins)[:3])
    return (
        f"the Tier-1 block costs {cost} tokens, over the budget of {budget} "
        f"(ORACLE_TIER1_BUDGET); the most expensive always plugins: {worst}. Shorten their "
        "manifests or make some on-demand."
    )
