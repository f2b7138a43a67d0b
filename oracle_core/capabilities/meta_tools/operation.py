"""The operation meta-tool: inspect (or cancel) an operation of the thread.

Shown only on threads that have an operation, after the meta-tools shown on every call: it
costs tokens there and nowhere else (the others stay within 130 tokens together). The
oracle's operations answer it (docs/waits.md); without them the tool does not exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools.definition import (
    MetaTool,
    OperationsAccess,
    RunCapabilities,
)
from oracle_core.plugins.core_tools import GET_OPERATION
from oracle_core.values.messages import ToolCall, ToolResult


@dataclass(frozen=True)
class GetOperation:
    """The operation meta-tool: asks the oracle's operations (they answer for the call's
    thread)."""

    operations: OperationsAccess

    @property
    def tool(self) -> Tool:
        """The tool as the model is shown it."""
        return OPERATION.tool

    async def __call__(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """What the operation named in ``arguments`` is (cancelled first, if asked)."""
        return await self.operations.get_operation(call, arguments)


def _handler(state: RunCapabilities) -> GetOperation | None:
    operations = state.shared.operations
    return GetOperation(operations) if operations is not None else None


OPERATION = MetaTool(
    name=GET_OPERATION,
    description="Inspect or cancel an operation.",
    parameters={
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Operation id"},
            "cancel": {"type": "boolean", "description": "Cancel it"},
        },
        "required": ["id"],
    },
    handler=_handler,
    always=False,
)
"""The operation meta-tool."""
