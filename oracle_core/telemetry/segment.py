"""What the tracing observer keeps of one run segment between its events.

A segment is one stretch of a run in one process (a run that waited and was resumed has a
second one): its span, the context its children start in, the model call in progress, the
tool calls and waits still open, and the tracer its spans are made with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer


@dataclass
class ModelCall:
    """A model call in progress: its span is made whole once the call ends (one SDK call).

    Attributes:
        name: the span's name (``chat {model}``).
        attributes: its attributes so far (usage is added when it comes).
        start: when the call started, in nanoseconds since the epoch.
    """

    name: str
    attributes: dict[str, Any]
    start: int


@dataclass
class Segment:
    """What the observer keeps of one run segment between its events.

    Attributes:
        run: the segment's ``invoke_agent`` span.
        context: the context its child spans start in.
        model: the model call in progress, if any.
        model_done: when that call's usage came (it ends at the next event).
        tools: the open ``execute_tool`` spans, by call id.
        tool_names: the tool each open call is of, by call id.
        loads: load spans waiting for their ``capability_loaded``, with their end time.
        waits: the open ``wait`` spans.
        shown: the tool names the segment's model calls were shown (a call of a tool the
            oracle does not know is named in a span only with content on: the name is the
            model's text).
        tracer: the tracer the segment's spans are made with.
    """

    run: Span
    context: Context
    model: ModelCall | None = None
    model_done: int | None = None
    tools: dict[str, Span] = field(default_factory=dict)
    tool_names: dict[str, str] = field(default_factory=dict)
    loads: list[tuple[Span, int]] = field(default_factory=list)
    waits: list[Span] = field(default_factory=list)
    shown: set[str] = field(default_factory=set)
    tracer: Tracer | None = None

    def tracer_of(self) -> Tracer:
        """The tracer of the segment (set when its span was started)."""
        assert self.tracer is not None
        return self.tracer
