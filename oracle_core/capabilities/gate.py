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
    GET_OPERATION,
    GET_OPERATION_TOOL,
    LOAD_CAPABILITY,
    META_TOOL_DEFINITIONS,
    META_TOOLS,
    echo,
)
from oracle_core.capabilities.surface import Catalog, Specialist, Surface, specialist_tools
from oracle_core.plugins.registry import BoundTool, Registry
from oracle_core.values.messages import ToolCall, ToolResult
from oracle_core.values.tool_errors import error_result

SPECIALIST_REFUSAL = "Tool {name} is not one of your tools: call only the tools you were given."
"""The refusal on a specialist surface, whatever was called: it has no capability to load."""

_CACHED_TOOL_LISTS = 1024
"""Distinct sets of loaded plugins whose tool lists are kept (least recently used go)."""

_META_NAMES = tuple(d.name for d in META_TOOL_DEFINITIONS if d.always)
"""The meta-tools' names, in the order :data:`META_TOOLS` shows them: their definitions' own
names, never the ``name`` of a shared tool object."""


@dataclass(frozen=True)
class _Offer:
    """One tool list the gate shows, with the names it decides calls on (its own strings)."""

    tools: tuple[Tool, ...]
    names: frozenset[str]


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
        # The names calls are decided on: the registry's and the core's own strings, never
        # read off the tool objects, which every request showing them shares (a plugin could
        # rename one in place; that must not change which call may run).
        self._specialist_names = (
            frozenset(name.partition(".")[2] for name in self.surface.tools)
            if isinstance(self.surface, Specialist)
            else frozenset()
        )
        # Per distinct set of loaded plugins: what is shown (immutable, so shared safely).
        self._offers: OrderedDict[tuple[str, ...], _Offer] = OrderedDict()

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
        tools = self._offer(loaded).tools
        if operations:
            meta = len(META_TOOLS)
            tools = (*tools[:meta], GET_OPERATION_TOOL, *tools[meta:])
        return tools

    def names(self, loaded: Sequence[str], *, operations: bool = False) -> frozenset[str]:
        """The names of what :meth:`tools` shows for the same arguments, as the gate owns them.

        Calls are decided on these: the registry's names (read once, when it was built) and
        the core's constants, never the ``name`` of a shared tool object.
        """
        if self.specialist is not None:
            return self._specialist_names
        names = self._offer(loaded).names
        return names | {GET_OPERATION} if operations else names

    def _offer(self, loaded: Sequence[str]) -> _Offer:
        key = tuple(loaded)
        offer = self._offers.get(key)
        if offer is None:
            bound = self.visible(key)
            offer = _Offer(
                (*META_TOOLS, *(b.tool for b in bound)),
                frozenset((*_META_NAMES, *(b.name for b in bound))),
            )
            self._offers[key] = offer
            if len(self._offers) > _CACHED_TOOL_LISTS:
                self._offers.popitem(last=False)
        else:
            self._offers.move_to_end(key)
        return offer

    def shown(self, chosen: Iterable[str], sent: Iterable[str] | None = None) -> Shown:
        """Which calls answering a request may run: tools the gate chose *and* the provider got.

        ``chosen``: the names the gate chose for the request (:meth:`names`); ``sent``: the
        names of the tools the provider got, read once when the request was sent. A tool a
        middleware added to the request was sent but not chosen; one it removed was chosen
        but not sent. Neither may run. Without ``sent`` (nothing was sent by a middleware's
        hand, as for a client that is not a model), what was chosen counts.
        """
        names = frozenset(chosen)
        if sent is not None:
            names &= frozenset(sent)
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
        return error_result(call, self.refusal(call.name, loaded), refused=True)


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
        """``None`` when ``call`` may run, else its refusal (``loaded``: the thread's plugins now).

        Decide on a call no one else holds (:func:`private_call`), and run that same call:
        a name read twice from a shared object may differ the second time.
        """
        return None if call.name in self.names else self.gate.refused(call, loaded)


def private_call(call: ToolCall) -> ToolCall:
    """A copy of ``call`` that only its caller holds, each field read once.

    Middleware receive calls and may keep them; the gate's check and the executor must see
    one value that nothing else can change between the two (not even ``object.__setattr__``
    on a frozen call a middleware kept).
    """
    return ToolCall(
        id=_plain(call.id),
        name=_plain(call.name),
        arguments=_plain(call.arguments),
        thread_id=_plain(call.thread_id),
        run_id=_plain(call.run_id),
        loaded=tuple(_plain(name) for name in call.loaded),
        user_id=_plain(call.user_id),
    )


def sent_names(tools: Iterable[object]) -> frozenset[str]:
    """The names of the tools a request sends, each read once, now (plain strings only).

    What a middleware put in a request may be any object; one without a plain string name
    is not a tool any call can name, so it adds nothing.
    """
    names: set[str] = set()
    for tool in tools:
        name = getattr(tool, "name", None)
        if isinstance(name, str):
            names.add(_plain(name))
    return frozenset(names)


def _plain(value: object) -> str:
    """``value`` as a plain ``str`` (a subclass could compare or hash as another name)."""
    return str.__str__(value) if isinstance(value, str) else ""
