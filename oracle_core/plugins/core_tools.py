"""The tools the core runs itself: their reserved names, and how the executor calls them.

The meta-tools are not plugin tools: they work on a run's capability state, get no
:class:`~oracle_core.ToolContext` and never wait. Each is defined once, in a module of
:mod:`oracle_core.capabilities.meta_tools` (what the model is shown and what answers a
call). Their names are listed here, in the order they are shown, because the plugins layer,
below the capabilities, refuses them: no plugin can register (or shadow) a tool called like
one; the registry refuses it. The meta-tools' package orders its definitions by this list.
Each meta-tool is an object of the :class:`CoreTool` protocol, found by name through the
same lookup as the plugin tools
(:meth:`oracle_core.capabilities.state.CapabilityState.resolve`), so the executor runs it
without knowing which one it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from oracle_core.authoring.tools.tool import Tool
from oracle_core.values.messages import ToolCall, ToolResult

LIST_CAPABILITIES = "list_capabilities"
"""The meta-tool that lists the capabilities the model may load."""

LOAD_CAPABILITY = "load_capability"
"""The meta-tool that loads capabilities, so their tools are shown from the next model call."""

SEARCH_CAPABILITIES = "search_capabilities"
"""The meta-tool that finds capabilities for tasks."""

GET_OPERATION = "get_operation"
"""The meta-tool that inspects (or cancels) an operation of the thread; see docs/waits.md."""

META_TOOL_ORDER: tuple[str, ...] = (
    LIST_CAPABILITIES,
    LOAD_CAPABILITY,
    SEARCH_CAPABILITIES,
    GET_OPERATION,
)
"""The list of meta-tools: their names, in the order they are shown.

Each name is defined by a module of :mod:`oracle_core.capabilities.meta_tools`, which finds
its modules and orders their definitions by this list (and refuses to import when the two
disagree). Adding a meta-tool is its module there and its name here.
"""

META_TOOL_NAMES = frozenset(META_TOOL_ORDER)
"""Tool names the core reserves for its meta-tools; no plugin may use them.

``get_operation`` is sent only on threads that have an operation (docs/waits.md).
"""


class CoreTool(Protocol):
    """A tool the core runs itself, over a run's state: the executor just calls it."""

    @property
    def tool(self) -> Tool:
        """The tool as the model is shown it (its name and schema)."""
        ...

    async def __call__(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """Answer ``call``, whose arguments decoded to ``arguments``; never raises for them."""
        ...
