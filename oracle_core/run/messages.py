"""The values that flow through a run: model requests and responses, tool calls and results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oracle_core.tools import Tool

Message = dict[str, Any]
"""One chat message in OpenAI format (``{"role": ..., "content": ..., ...}``)."""


@dataclass
class Usage:
    """Token use reported by the provider for one model call (or summed over several)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        """The usage as JSON-ready numbers."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass
class ModelRequest:
    """One model call about to be made. Middleware may read and change it.

    Attributes:
        thread_id: the thread being worked on.
        run_id: the run making the call.
        step: 1 for the run's first model call, then 2, 3, ...
        model: the litellm model string.
        system_prompt: the system prompt (Tier-1 block included).
        messages: the conversation so far, without the system message.
        tools: the tools shown to the model, as set by the capability gate.
        options: extra keyword arguments for ``litellm.acompletion``.
        user_id: who the run acts for.
    """

    thread_id: str
    run_id: str
    step: int
    model: str
    system_prompt: str
    messages: list[Message]
    tools: list[Tool]
    options: dict[str, Any] = field(default_factory=dict)
    user_id: str = "default"

    def openai_messages(self) -> list[Message]:
        """The messages as sent: the system prompt first, private keys removed."""
        system: list[Message] = [{"role": "system", "content": self.system_prompt}]
        return system + [public_message(m) for m in self.messages]

    def openai_tools(self) -> list[dict[str, Any]]:
        """The tools as OpenAI function definitions, in the order shown."""
        return [t.openai_schema() for t in self.tools]


@dataclass
class ModelResponse:
    """What the model answered: an assistant message (text and/or tool calls) and usage."""

    message: Message
    usage: Usage = field(default_factory=Usage)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The tool calls of the assistant message (OpenAI format)."""
        return list(self.message.get("tool_calls") or [])


@dataclass
class ToolCall:
    """One tool call the model asked for, on its way to being run.

    Attributes:
        id: the provider's call id.
        name: the tool name the model used.
        arguments: the raw JSON text of the arguments, as the model wrote it.
        offered: the tool names shown in the request that produced the call; the
            capability gate runs only calls whose tool is among them.
        thread_id: the thread the call belongs to.
        run_id: the run making it.
        loaded: the on-demand plugins loaded in the thread when the call runs.
        user_id: who the run acts for.
    """

    id: str
    name: str
    arguments: str
    offered: frozenset[str]
    thread_id: str
    run_id: str
    loaded: tuple[str, ...] = ()
    user_id: str = "default"


@dataclass
class ToolResult:
    """The outcome of a tool call, sent back to the model as a tool message.

    Attributes:
        call_id: the id of the call it answers.
        name: the tool name.
        content: the text the model reads.
        is_error: the call failed (bad arguments, the tool raised, timed out, ...).
        refused: the capability gate refused to run the call.
        loaded: plugins a ``load_capability`` call loaded.
    """

    call_id: str
    name: str
    content: str
    is_error: bool = False
    refused: bool = False
    loaded: list[str] = field(default_factory=list)

    def message(self) -> Message:
        """The result as an OpenAI tool message."""
        return {"role": "tool", "tool_call_id": self.call_id, "content": self.content}


def public_message(message: Message) -> Message:
    """Return ``message`` without the core's private bookkeeping keys (``_``-prefixed)."""
    return {k: v for k, v in message.items() if not k.startswith("_")}
