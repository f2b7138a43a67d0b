"""The capability gate: which tools the model sees, and which calls may run.

Every tool is bound when the oracle is built; the gate only filters. On each model call the
model is shown the meta-tools, every tool whose effective visibility is ``always`` or
``silent``, and the tools of the on-demand plugins loaded in the thread. A call runs only if
its tool was shown in the request that produced it; anything else gets an error telling the
model which capability to load, and names no other hidden tool.

The whole rule is one :class:`Gate`: the request builder asks it what to show
(:meth:`Gate.tools`), and the run loop asks it, per model response, which calls may run
(:meth:`Gate.shown`), before any plugin middleware sees a call and again for every call a
middleware replaced.

On a specialist surface (:mod:`oracle_core.capabilities.surface`) the model is shown exactly
the operator's tools, so a refusal there names nothing at all: there is nothing to load.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools import (
    GET_OPERATION_TOOL,
    LOAD_CAPABILITY,
    META_TOOLS,
    echo,
)
from oracle_core.capabilities.surface import Catalog, Specialist, Surface, specialist_tools
from oracle_core.plugins.registry import BoundTool, Registry
from oracle_core.values.messages import RequestTool, ToolCall, ToolResult

SPECIALIST_REFUSAL = "Tool {name} is not one of your tools: call only the tools you were given."
"""The refusal on a specialist surface, whatever was called: it has no capability to load."""

_CACHED_TOOL_LISTS = 1024
"""Distinct sets of loaded plugins whose tool lists are kept (least recently used go)."""


class Gate:
    """The capability gate of one assembled registry on one surface.

    Args:
        registry: the assembled plugins.
        surface: what the model is shown (default: the catalog).

    Raises:
        SurfaceError: a specialist surface names a tool ``registry`` does not have.
    """

    def __init__(self, registry: Registry, surface: Surface | None = None) -> None:
        self.registry = registry
        self.surface: Surface = surface or Catalog()
        self.specialist: tuple[Tool, ...] | None = (
            specialist_tools(self.surface, registry)
            if isinstance(self.surface, Specialist)
            else None
        )
        # Per distinct set of loaded plugins: the tuple shown (immutable, so shared safely).
        self._tool_lists: OrderedDict[tuple[str, ...], tuple[Tool, ...]] = OrderedDict()

    def visible(self, loaded: Sequence[str]) -> list[BoundTool]:
        """The plugin tools the catalog shows in a thread with ``loaded`` plugins.

        First every tool whose effective visibility is ``always`` or ``silent``, in registry
        order; then the on-demand tools of each loaded plugin, in load order. A load only
        ever appends to the list, so the prompt prefix a provider may cache stays unchanged.
        """
        shown = list(self.registry.standing_tools)
        for name in dict.fromkeys(loaded):
            shown += self.registry.on_demand_tools.get(name, ())
        return shown

    def tools(self, loaded: Sequence[str], *, operations: bool = False) -> tuple[Tool, ...]:
        """What a request shows in a thread with ``loaded`` plugins: meta-tools first.

        ``operations``: the thread has an operation, so ``get_operation`` is shown right
        after the three meta-tools. On a specialist surface: exactly its tools, whatever is
        loaded, and never a meta-tool.
        """
        if self.specialist is not None:
            return self.specialist
        key = tuple(loaded)
        tools = self._tool_lists.get(key)
        if tools is None:
            tools = (*META_TOOLS, *(b.tool for b in self.visible(key)))
            self._tool_lists[key] = tools
            if len(self._tool_lists) > _CACHED_TOOL_LISTS:
                self._tool_lists.popitem(last=False)
        else:
            self._tool_lists.move_to_end(key)
        if operations:
            meta = len(META_TOOLS)
            tools = (*tools[:meta], GET_OPERATION_TOOL, *tools[meta:])
        return tools

    def shown(
        self, chosen: Iterable[RequestTool], sent: Iterable[RequestTool] | None = None
    ) -> Shown:
        """Which calls answering a request may run: tools the gate chose *and* the provider got.

        A tool a middleware added to the request was sent but not chosen; one it removed
        was chosen but not sent. Neither may run. Without ``sent`` (nothing was sent by a
        middleware's hand, as for a client that is not a model), what was chosen counts.
        """
        names = frozenset(t.name for t in chosen)
        if sent is not None:
            names &= frozenset(t.name for t in sent)
        return Shown(self, names)

    def refusal(self, name: str, loaded: Sequence[str]) -> str:
        """The message a refused call gets: what to load, without naming any other hidden tool.

        Only a plugin the model could load itself is ever named: a tool of a silent plugin,
        or one that loading cannot show, gets the same answer as a tool that does not exist.
        On a specialist surface every refusal is the same sentence.
        """
        shown = echo(name)
        if self.specialist is not None:
            return SPECIALIST_REFUSAL.format(name=shown)
        bound = self.registry.tools.get(name)
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

    def refused(self, call: ToolCall, loaded: Sequence[str]) -> ToolResult:
        """The result of a call the gate does not let run, worded for the surface."""
        return ToolResult(
            call.id,
            call.name,
            json.dumps({"error": self.refusal(call.name, loaded)}),
            is_error=True,
            refused=True,
        )


@dataclass(frozen=True)
class Shown:
    """The tools one request showed the model: the only ones a call answering it may run.

    Attributes:
        gate: the gate that chose them (it words the refusals).
        names: the names of the tools shown.
    """

    gate: Gate
    names: frozenset[str]

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def check(self, call: ToolCall, loaded: Sequence[str]) -> ToolResult | None:
        """``None`` when ``call`` may run, else its refusal (``loaded``: the thread's plugins now)."""
        return None if call.name in self.names else self.gate.refused(call, loaded)
