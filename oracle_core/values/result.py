"""What a finished run produced, gathered from its events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oracle_core.values.events import CapabilityLoaded, Event, RunFinished, ToolCallEvent
from oracle_core.values.messages import Usage
from oracle_core.values.operations import Operation
from oracle_core.values.output import OutputSchema


@dataclass
class RunResult:
    """What a finished run produced.

    Attributes:
        run_id: the run's id.
        thread_id: its thread.
        status: ``completed``, ``failed`` or ``cancelled``; ``waiting_for_approval`` or
            ``waiting_for_connection`` when it stopped to wait (see ``operations``).
        answer: the final answer text (empty unless completed).
        usage: provider-reported tokens over the run.
        error: why it failed, when it did.
        events: every event, in order (model calls, tool calls and results, loads, usage).
        operations: what a waiting run waits on (empty for every other status).
        client_calls: the calls of client tools a ``waiting_for_client`` run hands back, as
            OpenAI ``tool_calls`` entries (``{"id", "type", "function": {"name",
            "arguments"}}``); continue the run with ``tool_results`` answering each id.
        output: for a completed run given an output schema, the parsed answer: an instance
            of the pydantic model it was given, else the JSON value; ``None`` otherwise.
        truncated: the model's output limit (``max_tokens``) cut the answer short
            (``finish_reason: "length"``); the run completed, but its answer is not whole.
    """

    run_id: str
    thread_id: str
    status: str
    answer: str
    usage: Usage
    error: str | None = None
    events: list[Event] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    client_calls: list[dict[str, Any]] = field(default_factory=list)
    output: Any = None
    truncated: bool = False

    @classmethod
    def from_events(
        cls, thread_id: str, events: list[Event], output: OutputSchema | None = None
    ) -> RunResult:
        """The result of a run from its complete list of events (ending with ``done``).

        ``output``: the output schema the run was given; one made from a pydantic model
        turns the parsed answer into an instance of it.

        Raises:
            ValueError: when ``events`` does not end with a :class:`RunFinished` event.
        """
        done = events[-1] if events else None
        if not isinstance(done, RunFinished):
            raise ValueError("the run has not finished: its events do not end with `done`")
        return cls(
            done.run_id,
            thread_id,
            done.status,
            done.answer,
            done.usage,
            done.error,
            list(events),
            [Operation.from_record(o) for o in done.operations],
            [dict(c) for c in done.client_calls],
            _output(done.output, output),
            done.truncated,
        )

    @property
    def tool_calls(self) -> list[ToolCallEvent]:
        """The tool calls the model made, in order."""
        return [e for e in self.events if isinstance(e, ToolCallEvent)]

    @property
    def loaded(self) -> list[str]:
        """Plugins this run loaded into the thread."""
        return [n for e in self.events if isinstance(e, CapabilityLoaded) for n in e.names]

    def to_json(self) -> dict[str, Any]:
        """The whole run as JSON-ready data."""
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "status": self.status,
            "answer": self.answer,
            "usage": self.usage.as_dict(),
            "error": self.error,
            "loaded": self.loaded,
            "operations": [o.to_json() for o in self.operations],
            "client_calls": list(self.client_calls),
            "output": _json(self.output),
            "truncated": self.truncated,
            "events": [e.to_json() for e in self.events],
        }


def _output(value: Any, output: OutputSchema | None) -> Any:
    return value if value is None or output is None else output.value(value)


def _json(value: Any) -> Any:
    """``value`` as JSON-ready data (a pydantic model instance as its JSON)."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value
