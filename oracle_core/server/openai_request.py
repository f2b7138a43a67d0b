"""What an OpenAI-style chat request asks of a run: the turn, the client's tools, the options.

Every field a client sends is either used, forwarded to the model, refused with a 400
naming it, or in a short documented list of fields that change nothing here; none is
dropped silently (docs/server.md lists each).

A request's messages become one of two turns:

- a **new message**: its last message is the user's;
- **tool results**: its last messages are ``tool`` messages answering the calls of the
  client's tools that the previous response handed back; they continue that run.

A stateless request (no thread named) also brings the conversation before: the thread it
runs on is seeded with it, tool calls and their results included.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oracle_core.errors import OutputSchemaError
from oracle_core.models.wire import call_entry, tool_answer
from oracle_core.server.errors import ApiError
from oracle_core.values.messages import Message, ToolCall
from oracle_core.values.output import OutputSchema
from oracle_core.values.run_options import ClientTool, RunOptions

FORWARDED = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "reasoning_effort",
    "parallel_tool_calls",
    "tool_choice",
    "response_format",
)
"""Request fields passed on to every model call of the run, as the client sent them."""

NO_EFFECT = {
    "metadata": "kept by OpenAI for its dashboard; the oracle keeps its own records",
    "store": "the oracle stores the conversation in its thread (or not, when stateless)",
    "service_tier": "the oracle has one tier",
    "prompt_cache_key": "the oracle's prompts are cached by the provider as they are",
    "safety_identifier": "the oracle's runs are kept per user (`user`)",
}
"""Request fields accepted that change nothing here, and why (OpenAI bookkeeping)."""

REFUSED = {
    "logprobs": "log probabilities are not kept through the oracle's tool loop",
    "top_logprobs": "log probabilities are not kept through the oracle's tool loop",
    "audio": "only text is supported",
    "modalities": "only text is supported",
    "prediction": "predicted outputs are not supported",
    "functions": "the legacy `functions` field: send `tools`",
    "function_call": "the legacy `function_call` field: send `tool_choice`",
    "web_search_options": "web search is a plugin's job here, not a request option",
}
"""Request fields the oracle cannot honour, and why (each a 400 when set)."""

OWN = frozenset(
    {"model", "messages", "stream", "stream_options", "user", "thread_id", "tools", "n"}
)
"""The fields the endpoint reads itself."""


def bad(kind: str, message: str) -> ApiError:
    """A 400 answer of type ``kind``."""
    return ApiError(400, kind, message)


@dataclass
class ChatTurn:
    """What one chat request asks for.

    Attributes:
        message: the user's new message (``None`` for tool results).
        tool_results: the client tools' results, by call id (``None`` for a new message).
        history: for a stateless request, the conversation before the turn, as thread
            messages (tool calls and results included).
        options: the client's tools and the options for the model.
        before: how many of the request's messages come before the turn's own.
    """

    message: str | None
    tool_results: dict[str, str] | None
    history: list[Message] = field(default_factory=list)
    options: RunOptions = field(default_factory=RunOptions)
    before: int = 0


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a list (other parts are a 400)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise bad("invalid_content", "a message's content must be a string or a list of parts")
    parts = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") != "text":
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            raise bad("unsupported_content", f"only text content is supported, got {kind!r}")
        parts.append(str(part.get("text") or ""))
    return "".join(parts)


def model_options(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields to pass to the model, after refusing what cannot be honoured.

    Raises:
        ApiError: 400 for a refused field that is set, or a field this endpoint does not know.
    """
    refused = [f"`{k}` ({REFUSED[k]})" for k, v in fields.items() if k in REFUSED and v]
    if refused:
        raise bad("unsupported_parameter", "not supported: " + "; ".join(refused))
    unknown = sorted(
        k for k in fields if k not in OWN and k not in REFUSED and k not in NO_EFFECT
        and k not in FORWARDED
    )  # fmt: skip
    if unknown:
        raise bad(
            "unknown_parameter",
            f"unknown request field(s) {', '.join(map(repr, unknown))}: the oracle forwards "
            f"{', '.join(FORWARDED)} to the model and refuses what it cannot honour, so an "
            "unknown field is an error rather than ignored",
        )
    return {k: fields[k] for k in FORWARDED if fields.get(k) is not None}


def client_tools(tools: Sequence[Any] | None) -> tuple[ClientTool, ...]:
    """The request's ``tools`` as client tools (function tools only).

    Raises:
        ApiError: 400 for an entry that is not ``{"type": "function", "function": {...}}``
            with a string name (the oracle checks names and schemas when the run starts).
    """
    found = []
    for index, entry in enumerate(tools or ()):
        function = entry.get("function") if isinstance(entry, Mapping) else None
        if (
            not isinstance(entry, Mapping)
            or entry.get("type") != "function"
            or not isinstance(function, Mapping)
            or not isinstance(function.get("name"), str)
        ):
            raise bad(
                "invalid_tools",
                f'tools[{index}] must be {{"type": "function", "function": {{"name": ..., '
                '"parameters": {...}}}}}: only function tools are supported',
            )
        parameters = function.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(parameters, Mapping):
            raise bad("invalid_tools", f"tools[{index}].function.parameters must be an object")
        found.append(
            ClientTool(function["name"], str(function.get("description") or ""), dict(parameters))
        )
    return tuple(found)


def output_of(response_format: Any) -> OutputSchema | None:
    """What a ``response_format`` asks the final answer to be (checked, one repair turn).

    Raises:
        ApiError: 400 for a ``response_format`` that is not one (an unknown type, a schema
            that is not valid JSON Schema), naming what is wrong.
    """
    if response_format is None:
        return None
    if not isinstance(response_format, Mapping):
        raise bad("invalid_response_format", "response_format must be an object")
    try:
        return OutputSchema.from_response_format(response_format)
    except OutputSchemaError as error:
        raise bad("invalid_response_format", str(error)) from None


def check_tool_choice(choice: Any, tools: Sequence[ClientTool]) -> None:
    """Refuse a ``tool_choice`` that names no client tool (it is forwarded otherwise).

    Raises:
        ApiError: 400 naming the value.
    """
    if choice is None or choice in ("auto", "none", "required"):
        return
    name = None
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        function = choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str) or name not in {t.name for t in tools}:
        raise bad(
            "invalid_tool_choice",
            f"tool_choice {json.dumps(choice)[:200]} must be 'auto', 'none', 'required' or "
            '{"type": "function", "function": {"name": N}} naming one of the request\'s tools',
        )


def chat_turn(messages: Sequence[Any], fields: Mapping[str, Any], *, stateless: bool) -> ChatTurn:
    """What a chat request with ``messages`` and the other ``fields`` asks of a run.

    Raises:
        ApiError: 400 for a request the oracle cannot run as asked (each names what).
    """
    tools = client_tools(fields.get("tools"))
    check_tool_choice(fields.get("tool_choice"), tools)
    options = RunOptions(
        client_tools=tools,
        model_options=model_options(fields),
        output=output_of(fields.get("response_format")),
    )
    rows = [_row(m, i) for i, m in enumerate(messages)]
    end = len(rows)
    while end and rows[end - 1]["role"] == "tool":
        end -= 1
    if end < len(rows):  # tool results continue the run that handed their calls back
        results = {str(r["tool_call_id"]): text_of(r.get("content")) for r in rows[end:]}
        history = _history(rows[:end]) if stateless else []
        if stateless:
            _check_answers(history, results)
        return ChatTurn(None, results, history, options, end)
    last = rows[-1]
    if last["role"] != "user":
        raise bad(
            "last_message_not_user",
            f"the last message must be the user's (role 'user') or tool results, not "
            f"{last['role']!r}",
        )
    history = _history(rows[:-1]) if stateless else []
    return ChatTurn(text_of(last.get("content")), None, history, options, len(rows) - 1)


def transcript_key(user: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """A digest of a conversation as a client sends it, for ``user``: what a stateless
    client's next request brings as its history when it echoes the oracle's answer.

    Only what a client keeps counts (role, text, tool calls, the call a result answers),
    so keys an SDK adds or drops (``refusal``, ``annotations``, ``name``) change nothing.
    """
    said = [
        [
            m.get("role"),
            text_of(m.get("content")) if m.get("role") != "assistant" or m.get("content") else "",
            [_call(c)["function"] | {"id": c.get("id")} for c in m.get("tool_calls") or []],
            m.get("tool_call_id"),
        ]
        for m in messages
    ]
    text = json.dumps([user, said], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _row(message: Any, index: int) -> dict[str, Any]:
    row = dict(message) if isinstance(message, Mapping) else {}
    role = row.get("role")
    if role not in ("system", "developer", "user", "assistant", "tool"):
        raise bad("invalid_message", f"messages[{index}] has role {role!r}")
    if role == "tool" and not isinstance(row.get("tool_call_id"), str):
        raise bad("invalid_message", f"messages[{index}] is a tool message without tool_call_id")
    return row


def _history(rows: Sequence[Mapping[str, Any]]) -> list[Message]:
    """A stateless request's earlier messages as thread messages (system ones left out:
    the oracle has its instructions); each tool message must answer a call made before it."""
    history: list[Message] = []
    asked: set[str] = set()
    for row in rows:
        role = row["role"]
        if role in ("system", "developer"):
            continue
        if role == "tool":
            call_id = str(row["tool_call_id"])
            if call_id not in asked:
                raise bad(
                    "invalid_tool_results",
                    f"a tool message answers {call_id!r}, which no earlier assistant message "
                    "called",
                )
            history.append(tool_answer(call_id, text_of(row.get("content"))))
            continue
        message: Message = {"role": role, "content": text_of(row.get("content"))}
        calls = row.get("tool_calls") if role == "assistant" else None
        if calls:
            message["tool_calls"] = [_call(c) for c in calls]
            message["content"] = message["content"] or None
            asked |= {c["id"] for c in message["tool_calls"]}
        history.append(message)
    return history


def _call(call: Any) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(call.get("id"), str):
        raise bad("invalid_message", "an assistant tool call needs an id and a function")
    arguments = function.get("arguments")
    text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return call_entry(ToolCall(call["id"], str(function.get("name") or ""), text))


def _check_answers(history: Sequence[Message], results: Mapping[str, str]) -> None:
    """Tool results of a stateless request must answer the calls of its last assistant message."""
    last = history[-1] if history else None
    asked = [c["id"] for c in (last or {}).get("tool_calls") or []]
    if not asked:
        raise bad(
            "invalid_tool_results",
            f"tool messages answer {', '.join(map(repr, results))}, but no assistant message "
            "right before them called a tool: they must follow the message whose tool_calls "
            "they answer",
        )
    unknown = [i for i in results if i not in asked]
    if unknown:
        raise bad(
            "invalid_tool_results",
            f"tool messages answer {', '.join(map(repr, unknown))}, which the assistant message "
            "before them did not call",
        )
