"""The capability gate: which tools the model sees, and which calls may run.

Every tool is bound when the oracle is built; the gate only filters. On each model call the
model is shown the meta-tools, every tool whose effective visibility is ``always`` or
``silent``, and the tools of the on-demand plugins loaded in the thread. A call runs only if
its tool was shown in the request that produced it; anything else gets an error telling the
model which capability to load, and names no other hidden tool.

The run loop applies the rule itself (:func:`offered`, :func:`refused`), before any plugin
middleware sees a call and again for every call a middleware replaced.

On a specialist surface (:mod:`oracle_core.capabilities.surface`) the model is shown exactly
the operator's tools, so a refusal there names nothing at all: there is nothing to load.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from oracle_core.capabilities.meta_tools import LOAD_CAPABILITY, echo
from oracle_core.plugins.registry import BoundTool, Registry
from oracle_core.values.messages import RequestTool, ToolCall, ToolResult


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


SPECIALIST_REFUSAL = "Tool {name} is not one of your tools: call only the tools you were given."
"""The refusal on a specialist surface, whatever was called: it has no capability to load."""


def refusal(
    registry: Registry, name: str, loaded: Sequence[str], *, specialist: bool = False
) -> str:
    """The message a refused call gets: what to load, without naming any other hidden tool.

    Only a plugin the model could load itself is ever named: a tool of a silent plugin, or
    one that loading cannot show, gets the same answer as a tool that does not exist. On a
    specialist surface (``specialist``) every refusal is the same sentence.
    """
    shown = echo(name)
    if specialist:
        return SPECIALIST_REFUSAL.format(name=shown)
    bound = registry.tools.get(name)
    plugin = bound.plugin if bound is not None else None
    if plugin is None or plugin.visibility != "on-demand":
        return (
            f"Tool {shown} does not exist. Call list_capabilities() to see the capabilities "
            f"you can load, then {LOAD_CAPABILITY} to get their tools."
        )
    if plugin.name in loaded:
        return (
            f"Tool {shown} was not available when you called it. Its capability "
            f"{plugin.name!r} is loaded now, so call the tool again."
        )
    load = json.dumps({"names": [plugin.name]})
    return (
        f"Tool {shown} is not available yet: call {LOAD_CAPABILITY}({load}) first, "
        "then call the tool again."
    )


def offered(gate_tools: Iterable[RequestTool], sent: Iterable[RequestTool]) -> frozenset[str]:
    """The tool names a call may run: chosen by the gate *and* actually sent to the provider.

    A tool a middleware added to the request was sent but not chosen; one it removed was
    chosen but not sent. Neither may run.
    """
    return frozenset(t.name for t in gate_tools) & frozenset(t.name for t in sent)


def refused(
    registry: Registry, call: ToolCall, loaded: Sequence[str], *, specialist: bool = False
) -> ToolResult:
    """The result of a call the gate does not let run (``specialist``: on that surface)."""
    return ToolResult(
        call.id,
        call.name,
        json.dumps({"error": refusal(registry, call.name, loaded, specialist=specialist)}),
        is_error=True,
        refused=True,
    )
