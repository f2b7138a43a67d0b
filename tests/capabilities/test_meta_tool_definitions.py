"""Each meta-tool is defined once, and everything that names the meta-tools reads that list.

The reserved names of the plugins layer lie below the capabilities (it cannot import the
definitions), so this test is what keeps them and the definitions the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle_core.capabilities.meta_tools import (
    GET_OPERATION_SCHEMA,
    GET_OPERATION_TOOL,
    META_TOOL_DEFINITIONS,
    META_TOOL_SCHEMAS,
    META_TOOLS,
    MetaTool,
)
from oracle_core.capabilities.state import Capabilities
from oracle_core.plugins.core_tools import META_TOOL_NAMES
from oracle_core.plugins.registry import Registry
from oracle_core.telemetry.metrics import CORE_PLUGIN, plugin_of
from oracle_core.values.messages import ToolCall, ToolResult

PACKAGE = Path(__file__).resolve().parents[2] / "oracle_core"


class _Operations:
    async def get_operation(self, call: ToolCall, arguments: object) -> ToolResult:
        return ToolResult(call.id, call.name, "{}")


def test_the_reserved_names_are_the_definitions_names() -> None:
    assert {d.name for d in META_TOOL_DEFINITIONS} == META_TOOL_NAMES
    assert len({d.name for d in META_TOOL_DEFINITIONS}) == len(META_TOOL_DEFINITIONS)


def test_the_tools_shown_on_every_call_are_the_always_definitions_in_their_order() -> None:
    always = [d for d in META_TOOL_DEFINITIONS if d.always]
    assert list(META_TOOLS) == [d.tool for d in always]
    assert list(META_TOOL_SCHEMAS) == [d.schema for d in always]
    assert [d.always for d in META_TOOL_DEFINITIONS] == sorted(
        (d.always for d in META_TOOL_DEFINITIONS), reverse=True
    ), "the meta-tools shown on every call come first"
    shown_sometimes = [d for d in META_TOOL_DEFINITIONS if not d.always]
    assert [d.tool for d in shown_sometimes] == [GET_OPERATION_TOOL]
    assert [d.schema for d in shown_sometimes] == [GET_OPERATION_SCHEMA]


@pytest.mark.parametrize("definition", META_TOOL_DEFINITIONS, ids=lambda d: d.name)
def test_a_definition_is_its_tool_and_its_handler(definition: MetaTool) -> None:
    state = Capabilities(Registry(), operations=_Operations()).state()
    tool = state.resolve(definition.name)

    assert tool is state.tools[definition.name]
    assert tool.tool is definition.tool  # type: ignore[union-attr]
    assert definition.tool.name == definition.name
    assert definition.tool.openai_schema() == definition.schema


def test_a_state_without_operations_has_every_meta_tool_but_the_operation_one() -> None:
    state = Capabilities(Registry()).state()

    assert list(state.tools) == [d.name for d in META_TOOL_DEFINITIONS if d.always]


@pytest.mark.parametrize("definition", META_TOOL_DEFINITIONS, ids=lambda d: d.name)
def test_telemetry_labels_every_meta_tool_as_the_core(definition: MetaTool) -> None:
    assert plugin_of(Registry(), definition.name) == CORE_PLUGIN


def test_the_search_meta_tool_is_spelled_in_its_module_and_the_reserved_names_only() -> None:
    # Everything else reads its definition (or the reserved name), so renaming it or adding
    # one is a change of its module and the list.
    spelled = sorted(
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        if "search_capabilities" in path.read_text(encoding="utf-8")
    )
    assert spelled == [
        "oracle_core/capabilities/meta_tools/finding.py",
        "oracle_core/plugins/core_tools.py",
    ]
