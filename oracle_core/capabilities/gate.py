"""The capability gate: which tools the model sees, and which calls may run.

Every tool is bound when the oracle is built; the gate only filters. On each model call the
model is shown the meta-tools, every tool whose effective visibility is ``always`` or
``silent``, and the tools of the on-demand plugins loaded in the thread. A call runs only if
its tool was shown in the request that produced it; anything else gets an error telling the
model which capability to load, and names no other hidden tool.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from oracle_core.capabilities.meta_tools import LOAD_CAPABILITY
from oracle_core.plugins.registry import BoundTool, Registry
from oracle_core.run.messages import ToolCall, ToolResult
from oracle_core.run.middleware import Middleware, ToolHandler


def visible_tools(registry: Registry, loaded: Sequence[str]) -> list[BoundTool]:
    """The plugin tools the model may see in a thread with ``loaded`` plugins.

    First every tool whose effective visibility is ``always`` or ``silent``, in registry
    order; then the on-demand tools of each loaded plugin, in load order. A load only ever
    appends to the list, so the prompt prefix a provider may cache stays unchanged.
    """
    shown = list(registry.standing_tools)
    for name in dict.fromkeys(loaded):
        shown += registry.on_demand_tools.get(name, ())
    return shown


def refusal(registry: Registry, name: str, loaded: Sequence[str]) -> str:
    """The message a refused call gets: what to load, without naming any other hidden tool."""
    bound = registry.tools.get(name)
    if bound is None:
        return (
            f"Tool {name!r} does not exist. Call list_capabilities() to see the capabilities "
            f"you can load, then {LOAD_CAPABILITY} to get their tools."
        )
    plugin = bound.plugin.name
    if plugin in loaded:
        return (
            f"Tool {name!r} was not available when you called it. Its capability {plugin!r} "
            "is loaded now, so call the tool again."
        )
    load = json.dumps({"names": [plugin]})
    return (
        f"Tool {name!r} is not available yet: call {LOAD_CAPABILITY}({load}) first, "
        "then call the tool again."
    )


class CapabilityGate(Middleware):
    """The always-on first middleware: refuses any call to a tool that was not shown.

    It cannot be removed or reordered; plugin middleware runs inside it, so nothing a plugin
    does can smuggle a hidden call past it.
    """

    plugin = "oracle-core"

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    async def wrap_tool_call(self, call: ToolCall, call_next: ToolHandler) -> ToolResult:
        if call.name not in call.offered:
            return ToolResult(
                call.id,
                call.name,
                json.dumps({"error": refusal(self.registry, call.name, call.loaded)}),
                is_error=True,
                refused=True,
            )
        return await call_next(call)
