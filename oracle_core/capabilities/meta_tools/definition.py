"""What a meta-tool is: one definition holding everything the core knows about it.

A :class:`MetaTool` names the tool, says what the model is shown (description and
parameters) and how a call is answered over a run's capabilities (its handler). Each
meta-tool is defined once, in a module of its own beside this one, and
:data:`~oracle_core.capabilities.meta_tools.META_TOOL_DEFINITIONS` lists them in the order
they are shown; everything else (the gate's tool list, the capability state, telemetry,
the reserved names' check) reads that list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from oracle_core.authoring.tools.tool import Tool
from oracle_core.plugins.core_tools import CoreTool
from oracle_core.plugins.registry import Registry
from oracle_core.values.messages import ToolCall, ToolResult

if TYPE_CHECKING:
    from oracle_core.capabilities.search import CapabilitySearch


class OperationsAccess(Protocol):
    """What ``get_operation`` reads and cancels operations through (the background work)."""

    async def get_operation(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """Answer a ``get_operation`` call about an operation of the call's thread."""
        ...


class SharedCapabilities(Protocol):
    """What every run of one registry shares, as a meta-tool's handler reads it."""

    @property
    def list_limit(self) -> int:
        """The most plugins the listing shows one by one (``ORACLE_LIST_LIMIT``)."""
        ...

    @property
    def operations(self) -> OperationsAccess | None:
        """The thread's operations, or ``None`` when the oracle has none."""
        ...

    def search(self) -> CapabilitySearch:
        """The capability search, made on first use."""
        ...


class RunCapabilities(Protocol):
    """A run's capabilities as a meta-tool's handler reads and changes them."""

    @property
    def shared(self) -> SharedCapabilities:
        """What every run of the registry shares."""
        ...

    @property
    def registry(self) -> Registry:
        """The assembled plugins."""
        ...

    @property
    def loaded(self) -> tuple[str, ...]:
        """The plugins loaded in the thread now, in load order."""
        ...

    def load(self, names: Sequence[str]) -> None:
        """Add ``names`` to the loaded plugins."""
        ...


def run_by_core(**_: Any) -> Any:
    """The ``function`` of a meta-tool's :class:`~oracle_core.Tool`: never called.

    Only the schema of these Tool objects is used: the core answers each meta-tool itself,
    through its definition's handler, over a run's capability state.
    """
    raise RuntimeError("meta-tools are run by the oracle's runtime, not called directly")


@dataclass(frozen=True)
class MetaTool:
    """One meta-tool: its name, what the model is shown, and what answers a call.

    Attributes:
        name: the name the model calls it by (reserved: no plugin tool may take it).
        description: what the model is told it does.
        parameters: its parameters' JSON schema, as the model is shown it.
        handler: makes the :class:`~oracle_core.plugins.core_tools.CoreTool` that answers
            its calls over one run's capabilities (``None``: the tool does not exist for
            this run, e.g. ``get_operation`` without operations).
        always: shown on every model call of the catalog surface; otherwise only where the
            surface asks for it (``get_operation``: threads with an operation).
        tool: the meta-tool as a :class:`~oracle_core.Tool` (made from the fields above).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[[RunCapabilities], CoreTool | None]
    always: bool = True
    tool: Tool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tool = Tool(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            function=run_by_core,
        )
        object.__setattr__(self, "tool", tool)

    @property
    def schema(self) -> dict[str, Any]:
        """The meta-tool as an OpenAI function definition (the bytes a provider is sent)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def strings(description: str) -> dict[str, Any]:
    """An array-of-strings parameter's schema, with its description.

    Every parameter carries a description: without one a weak model fills the parameter
    with schema words ("items", "string", "name1").
    """
    return {"type": "array", "items": {"type": "string"}, "description": description}
