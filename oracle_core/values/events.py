"""Events a streaming run yields, in order, as the run happens."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from oracle_core.values.messages import Usage


@dataclass
class Event:
    """Base class of run events; ``type`` names the kind in JSON and SSE."""

    type: ClassVar[str] = "event"

    def to_json(self) -> dict[str, Any]:
        """The event as JSON-ready data with its ``type``."""
        data: dict[str, Any] = {"type": self.type}
        for item in fields(self):
            value = getattr(self, item.name)
            data[item.name] = value.as_dict() if isinstance(value, Usage) else value
        return data


@dataclass
class RunStarted(Event):
    """A run began on a thread."""

    type: ClassVar[str] = "run_started"
    run_id: str
    thread_id: str


@dataclass
class RunResumed(Event):
    """A run cut off by the end of its process goes on, in this process (docs/scale-out.md).

    Attributes:
        run_id: the run.
        from_step: the model calls it had made (and saved) before it was cut off; the next
            is ``from_step + 1``.
        reason: why it is resumed (``cut_off``: no process held its thread any more).
    """

    type: ClassVar[str] = "run_resumed"
    run_id: str
    from_step: int
    reason: str = "cut_off"


@dataclass
class ModelCallStarted(Event):
    """A model call is about to be made: what the model is shown, and what it costs.

    Attributes:
        step: 1 for the run's first call, then 2, 3, ...
        tools: the tool names shown, meta-tools first.
        tokens: the prompt's split in tokens: ``tier1``, ``meta_tools``, ``tool_schemas``,
            ``messages`` (system instructions included) and ``total``.
    """

    type: ClassVar[str] = "model_call"
    step: int
    tools: list[str]
    tokens: dict[str, int] = field(default_factory=dict)


@dataclass
class TextDelta(Event):
    """A piece of the model's answer text."""

    type: ClassVar[str] = "text_delta"
    text: str


@dataclass
class ToolCallEvent(Event):
    """The model asked for a tool call."""

    type: ClassVar[str] = "tool_call"
    id: str
    name: str
    arguments: str


@dataclass
class ToolResultEvent(Event):
    """A tool call finished (or was refused); ``content`` is what the model reads."""

    type: ClassVar[str] = "tool_result"
    id: str
    name: str
    content: str
    is_error: bool = False
    refused: bool = False


@dataclass
class CapabilityLoaded(Event):
    """``load_capability`` added plugins to the thread; their tools show from the next call."""

    type: ClassVar[str] = "capability_loaded"
    names: list[str]


@dataclass
class UsageEvent(Event):
    """The provider's token usage for one model call."""

    type: ClassVar[str] = "usage"
    step: int
    usage: Usage


@dataclass
class ApprovalRequested(Event):
    """A call needs a person's approval: the run stops as ``waiting_for_approval``.

    Attributes:
        operation: the approval operation (``Operation.to_json()``): the exact call, its
            digest, who asked, the deadline; decide it with ``oracle operations approve ID``.
    """

    type: ClassVar[str] = "approval_requested"
    operation: dict[str, Any]


@dataclass
class ConnectionRequested(Event):
    """A call needs a credential that is not set: the run stops as ``waiting_for_connection``.

    Attributes:
        operation: the connection operation (``Operation.to_json()``, never a secret): its
            ``details`` name the plugin's connection and how to supply it.
    """

    type: ClassVar[str] = "connection_requested"
    operation: dict[str, Any]


@dataclass
class OperationUpdated(Event):
    """An operation was made or changed: a background call started, a wait was settled.

    Attributes:
        operation: the operation as it is now (``Operation.to_json()``).
    """

    type: ClassVar[str] = "operation_updated"
    operation: dict[str, Any]


@dataclass
class RunFinished(Event):
    """The run ended; ``answer`` is the final text (empty unless completed).

    ``operations`` lists the operations a ``waiting_for_*`` run waits on (their
    ``to_json()``); it is empty for every other status. ``client_calls`` lists the calls of
    client tools a ``waiting_for_client`` run hands back (OpenAI ``tool_calls`` entries).
    ``output`` is the parsed JSON of a completed run that was given an output schema (its
    ``answer`` is that JSON's text); ``None`` otherwise. ``truncated``: the model's output
    limit (``max_tokens``) cut the answer short (``finish_reason: "length"``): the run
    completed, but its answer is not whole.
    """

    type: ClassVar[str] = "done"
    run_id: str
    status: str
    answer: str
    usage: Usage
    error: str | None = None
    operations: list[dict[str, Any]] = field(default_factory=list)
    client_calls: list[dict[str, Any]] = field(default_factory=list)
    output: Any = None
    truncated: bool = False
