"""The values that flow through a run: model requests and responses, tool calls and results."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: the events a CLI prints need it not
    from oracle_core.values.operations import Operation

Message = dict[str, Any]
"""One chat message in OpenAI format (``{"role": ..., "content": ..., ...}``)."""


class RequestTool(Protocol):
    """What a model request needs of a tool it shows: the model's adapters, the middleware
    and the servers read these, never how the tool runs.

    :class:`~oracle_core.Tool` is one; the protocol keeps the request, a value, from
    depending on the tools' own layer.
    """

    @property
    def name(self) -> str:
        """The name the model calls it by."""
        ...

    @property
    def description(self) -> str:
        """What it does, as the model reads it."""
        ...

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of its arguments."""
        ...

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI ``tools`` entry (``{"type": "function", ...}``)."""
        ...


def function_definition(name: str, description: str, parameters: Any) -> dict[str, Any]:
    """A tool as an OpenAI ``tools`` entry: ``{"type": "function", "function": {...}}``."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


@dataclass(frozen=True)
class Usage:
    """Token use of one model call (or summed over several).

    Attributes:
        prompt_tokens: tokens the model read.
        completion_tokens: tokens it wrote.
        estimated: some of the figures are the oracle's own count, not the provider's: the
            provider reported no usage, or an attempt was abandoned (a timeout, a 5xx) and
            its prompt counted. A sum is estimated when any part of it is.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
        )

    def as_dict(self) -> dict[str, Any]:
        """The usage as JSON-ready numbers; ``"estimated": true`` only when it is one (so the
        shape of a provider's figures stays OpenAI's)."""
        data: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.estimated:
            data["estimated"] = True
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage:
        """The usage :meth:`as_dict` wrote (rows saved before ``estimated`` read as reported)."""
        if not isinstance(data, Mapping):
            return cls()
        return cls(
            int(data.get("prompt_tokens") or 0),
            int(data.get("completion_tokens") or 0),
            data.get("estimated") is True,
        )


@dataclass(frozen=True)
class ModelRequest:
    """One model call about to be made. Immutable: a middleware returns a changed copy.

    Make a changed copy with :meth:`replace` (``request.replace(tools=(*request.tools, t))``);
    two requests never share a mutable list, so a change made for one user or one thread is
    never seen by another.

    Attributes:
        thread_id: the thread being worked on.
        run_id: the run making the call.
        step: 1 for the run's first model call, then 2, 3, ...
        model: the model string.
        system_prompt: the system prompt (Tier-1 block included).
        messages: the conversation so far, without the system message (read-only).
        tools: the tools shown to the model, as chosen by the capability gate.
        options: extra keyword arguments for the model call (``temperature``, ...).
        user_id: who the run acts for.
    """

    thread_id: str
    run_id: str
    step: int
    model: str
    system_prompt: str
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[RequestTool, ...]
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    user_id: str = "default"

    def __post_init__(self) -> None:
        # Callers may pass lists and dicts; what the request holds can never be mutated.
        object.__setattr__(self, "messages", tuple(self.messages))
        object.__setattr__(self, "tools", tuple(self.tools))
        if not isinstance(self.options, MappingProxyType):
            object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def replace(self, **changes: Any) -> ModelRequest:
        """A copy of this request with ``changes`` (``tools=``, ``options=``, ``messages=``...)."""
        return dataclasses.replace(self, **changes)

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the tools shown, in order."""
        return tuple(t.name for t in self.tools)

    def openai_messages(self) -> list[Message]:
        """The messages as sent: the system prompt first, private keys removed, and the
        turns that failed before any answer left out (:data:`UNANSWERED`)."""
        system: list[Message] = [{"role": "system", "content": self.system_prompt}]
        return system + [public_message(m) for m in answered(self.messages)]

    def openai_tools(self) -> list[dict[str, Any]]:
        """The tools as OpenAI function definitions, in the order shown."""
        return [t.openai_schema() for t in self.tools]


FINISH_LENGTH = "length"
"""The ``finish_reason`` of a reply the model's output limit (``max_tokens``) cut short."""


@dataclass(frozen=True)
class ModelResponse:
    """What the model answered: an assistant message (text and/or tool calls) and usage.

    The run acts on :attr:`calls`, typed; :attr:`message` is the assistant message as it is
    saved and sent back to the model (the OpenAI shape, built and read only in
    :mod:`oracle_core.models.wire`), and the calls are always its own: the oracle's models
    give both, and a response made from a message alone
    (``ModelResponse({"role": "assistant", ...})``, as a middleware may answer) or whose
    message a middleware changed has its calls read from the message when it enters the
    run. To change a reply's calls, change its message
    (:func:`oracle_core.models.wire.reply_message` makes one from calls).

    Attributes:
        message: the assistant message (OpenAI format).
        usage: its token use (``usage.estimated`` when the provider reported none).
        finish_reason: why the model stopped, as the provider said (``stop``,
            ``tool_calls``, ``length``...); ``None`` when it did not say.
        cut_off: the ids of tool calls whose arguments the reply ended in the middle of
            (the output limit, or a stream that broke): they are answered with an error
            saying so, never run.
        calls: the tool calls of the message, in order, each with its id, name and
            arguments (not yet bound to a thread or run: the run adds that).
    """

    message: Mapping[str, Any]
    usage: Usage = field(default_factory=lambda: Usage())
    finish_reason: str | None = None
    cut_off: tuple[str, ...] = ()
    calls: tuple[ToolCall, ...] = ()

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The tool calls of the assistant message (OpenAI format); the run reads
        :attr:`calls`, this stays for middleware written against it."""
        return list(self.message.get("tool_calls") or [])

    @property
    def text(self) -> str:
        """The text of the assistant message ("" when it has none)."""
        return str(self.message.get("content") or "")

    @property
    def truncated(self) -> bool:
        """Whether the model's output limit cut the reply short (``finish_reason: length``)."""
        return self.finish_reason == FINISH_LENGTH

    @property
    def empty(self) -> bool:
        """Whether the reply has neither text (beyond white space) nor tool calls."""
        return not self.text.strip() and not self.calls and not self.tool_calls


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for, on its way to being run. Immutable.

    A model's reply carries its calls as these (:attr:`ModelResponse.calls`), with only
    ``id``, ``name`` and ``arguments``; the run loop binds each to its thread and run before
    it runs. A middleware that wants to change a call returns ``call.replace(...)``; the
    run loop checks a replaced call against the capability gate again, so no change can run
    a tool the model was not shown. What the model was shown is the run loop's own record,
    not a field of the call.

    Attributes:
        id: the provider's call id.
        name: the tool name the model used.
        arguments: the raw JSON text of the arguments, as the model wrote it (see
            :attr:`decoded`).
        thread_id: the thread the call belongs to ("" until the run binds it).
        run_id: the run making it ("" until the run binds it).
        loaded: the on-demand plugins loaded in the thread when the call was made.
        user_id: who the run acts for.
    """

    id: str
    name: str
    arguments: str
    thread_id: str = ""
    run_id: str = ""
    loaded: tuple[str, ...] = ()
    user_id: str = "default"

    def replace(self, **changes: Any) -> ToolCall:
        """A copy of this call with ``changes`` (``name=``, ``arguments=``...)."""
        return dataclasses.replace(self, **changes)

    @property
    def decoded(self) -> dict[str, Any] | None:
        """The arguments decoded: a JSON object (``{}`` for none at all), or ``None`` when
        they are not one (the executor refuses such a call, saying why)."""
        if not self.arguments.strip():
            return {}
        try:
            value = json.loads(self.arguments)
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class ToolResult:
    """The outcome of a tool call, sent back to the model as a tool message. Immutable.

    Attributes:
        call_id: the id of the call it answers.
        name: the tool name.
        content: the text the model reads.
        is_error: the call failed (bad arguments, the tool raised, timed out, ...).
        refused: the capability gate refused to run the call.
        loaded: plugins a ``load_capability`` call loaded.
        value: what the tool function returned, before it became ``content`` (never saved).
        error: the exception the call failed with, when it raised (never saved).
        operation: the operation the call made (never saved): a ``pending`` wait (the
            call did not run: the run stops to wait for it) or a ``running`` background
            call (``content`` tells the model its id).
    """

    call_id: str
    name: str
    content: str
    is_error: bool = False
    refused: bool = False
    loaded: tuple[str, ...] = ()
    value: Any = field(default=None, repr=False, compare=False)
    error: BaseException | None = field(default=None, repr=False, compare=False)
    operation: Operation | None = field(default=None, repr=False, compare=False)

    def replace(self, **changes: Any) -> ToolResult:
        """A copy of this result with ``changes``."""
        return dataclasses.replace(self, **changes)

    def message(self) -> Message:
        """The result as an OpenAI tool message (the run builds it with
        :func:`oracle_core.models.wire.tool_message`; this stays for middleware)."""
        return {"role": "tool", "tool_call_id": self.call_id, "content": self.content}


UNANSWERED = "_unanswered"
"""The private key of the marker a run that failed (or was cancelled) before any answer
saves after its user message: the thread keeps the message, and no model is sent it again
(the next turn would otherwise send it twice). Its value is the run's id."""


def unanswered_marker(run_id: str) -> Message:
    """The marker that closes a turn that ended without an answer (see :data:`UNANSWERED`)."""
    return {"role": "assistant", "content": "", UNANSWERED: run_id}


def answered(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``messages`` without the turns that ended without an answer: each marker and the
    user message just before it."""
    kept: list[Mapping[str, Any]] = []
    for message in messages:
        if UNANSWERED in message:
            if kept and kept[-1].get("role") == "user":
                kept.pop()
            continue
        kept.append(message)
    return kept


def public_message(message: Mapping[str, Any]) -> Message:
    """Return ``message`` without the core's private bookkeeping keys (``_``-prefixed)."""
    return {k: v for k, v in message.items() if not k.startswith("_")}


def content_of(value: Any) -> str:
    """The text the model reads for a tool's return value: strings as is, the rest as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
