"""The OpenAI chat completions shape on the wire: the messages sent, the replies read.

This is the one module that builds or reads that shape: an assistant message with its
``tool_calls`` entries (:func:`reply_message`, :func:`call_entry`), a tool message
(:func:`tool_message`), and the typed :class:`~oracle_core.values.messages.ToolCall` values the
run loop acts on, read from either (:func:`calls_of`, :func:`typed`).

litellm and the openai SDK answer with objects of the same shape (``choices[0].message``,
streamed ``choices[0].delta`` pieces, ``usage``), so both client paths turn them into a
:class:`ModelResponse` with this code and report the same message, tool calls, finish reason
and usage. The reading is tolerant: servers that call themselves OpenAI-compatible differ
(ids come late or never; usage may be missing), and a reply of any shape is read without
raising. What one kind of server deviates in (llama.cpp repeats a tool's name in every
streamed piece, and fails on a tool-only message without text) is its row in
:mod:`oracle_core.models.profiles`, which the functions here are given.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from oracle_core.models.estimate import estimated_usage
from oracle_core.models.profiles import OPENAI_COMPATIBLE, ServerProfile
from oracle_core.values.messages import (
    FINISH_LENGTH,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolResult,
    Usage,
)

__all__ = [
    "StreamAssembler",
    "assistant_message",
    "call_entry",
    "calls_of",
    "read_calls",
    "reply_message",
    "reported",
    "response_from",
    "saved_reply",
    "tool_answer",
    "tool_call",
    "tool_message",
    "typed",
    "usage_from",
    "wire_messages",
]


def assistant_message(content: str | None, tool_calls: list[dict[str, Any]] | None) -> Message:
    """An OpenAI assistant message; ``tool_calls`` is left out when empty."""
    message: Message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str) -> dict[str, Any]:
    """An OpenAI tool call entry, for scripted models."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def call_entry(call: ToolCall) -> dict[str, Any]:
    """``call`` as an OpenAI ``tool_calls`` entry: ``{"id", "type", "function"}``."""
    return tool_call(call.name, call.arguments, call.id)


def reply_message(content: str | None, calls: Sequence[ToolCall]) -> Message:
    """The assistant message of a reply with ``content`` and ``calls``, as it is saved."""
    return assistant_message(content, [call_entry(c) for c in calls])


def tool_message(result: ToolResult) -> Message:
    """``result`` as the OpenAI tool message that answers its call."""
    return tool_answer(result.call_id, result.content)


def tool_answer(call_id: str, content: str) -> Message:
    """The OpenAI tool message that answers the call ``call_id`` with ``content``."""
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def calls_of(message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    """The tool calls of an assistant message (saved, or made by hand), typed."""
    return read_calls(message.get("tool_calls"))


def read_calls(entries: Any) -> tuple[ToolCall, ...]:
    """OpenAI ``tool_calls`` entries as typed calls (anything not an entry is left out).

    Every field is read as text: an id or a name that is not a string is its ``str``; the
    arguments, the JSON text as sent (a value that is not text, as JSON).
    """
    calls = []
    for entry in _items(entries):
        if not isinstance(entry, Mapping):
            continue
        function = entry.get("function") or {}
        arguments = function.get("arguments")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(ToolCall(str(entry.get("id")), str(function.get("name") or ""), arguments))
    return tuple(calls)


def typed(response: ModelResponse) -> ModelResponse:
    """``response`` with the typed :attr:`~ModelResponse.calls` of its message.

    The message is what is saved and sent back to the model, so the calls the run acts on
    are always its own: a response made from a message alone (a middleware's, a hand-made
    model's) has them read from it, and so has one whose message a middleware changed
    (``dataclasses.replace(response, message=...)``) and whose calls it left as they were.
    """
    calls = calls_of(response.message)
    return response if calls == response.calls else dataclasses.replace(response, calls=calls)


def saved_reply(
    response: ModelResponse, shorten: Callable[[str], str], too_long: Callable[[str], bool]
) -> Message:
    """The assistant message of ``response`` to save: its text through ``shorten``, and the
    arguments ``too_long`` says are over the limit replaced by a note.

    Arguments are never cut (a cut would change what the call asks for); the executor
    refuses a call whose arguments are too long.
    """
    assistant = dict(response.message)
    content = assistant.get("content")
    if isinstance(content, str):
        assistant["content"] = shorten(content)
    entries = []
    for entry in _items(assistant.get("tool_calls")):
        read = read_calls([entry])  # () for an entry that is no call: kept as it is
        if read and too_long(arguments := read[0].arguments):
            note = json.dumps({"_dropped": f"{len(arguments)} characters of arguments"})
            entry = {**entry, "function": {**(entry.get("function") or {}), "arguments": note}}
        entries.append(entry)
    if entries:
        assistant["tool_calls"] = entries
    return assistant


def usage_from(raw: Any) -> Usage:
    """The :class:`Usage` of a response's or chunk's ``usage`` (an object or a dict)."""
    return Usage(_count(_field(raw, "prompt_tokens")), _count(_field(raw, "completion_tokens")))


def reported(raw: Any) -> bool:
    """Whether ``raw`` (a ``usage`` field) reports any tokens: a server that sends none, or
    only zeros (no real call reads nothing), reported nothing."""
    return usage_from(raw).total_tokens > 0


def response_from(
    completion: Any,
    request: ModelRequest | None = None,
    profile: ServerProfile = OPENAI_COMPATIBLE,
) -> ModelResponse:
    """The :class:`ModelResponse` of a whole (non-streamed) chat completion from a server
    of ``profile``.

    Without usage from the server, the usage is estimated from ``request`` and the reply
    (:mod:`oracle_core.models.estimate`), marked ``estimated``.
    """
    choice = _first(_field(completion, "choices"))
    message = _field(choice, "message")
    answer = StreamAssembler(request, profile)
    answer.add_usage(_field(completion, "usage"))
    answer.add_finish(_field(choice, "finish_reason"))
    for index, call in enumerate(_items(_field(message, "tool_calls"))):
        answer.add_call(index, call)
    answer.add_text(_field(message, "content"))
    return answer.response()


def wire_messages(
    request: ModelRequest, profile: ServerProfile = OPENAI_COMPATIBLE
) -> list[Message]:
    """The messages of ``request`` as both client paths send them to a server of ``profile``.

    An assistant message without text (one that only calls tools) carries the profile's
    :attr:`~oracle_core.models.profiles.ServerProfile.tool_only_content` (``""`` for every
    server today: llama.cpp's templates fail on a missing key and on ``null``).
    """
    messages = request.openai_messages()
    content = profile.tool_only_content
    for index, message in enumerate(messages):
        if message.get("role") == "assistant" and message.get("content") is None:
            messages[index] = {**message, "content": content}
    return messages


class StreamAssembler:
    """Collects streamed chunks into the whole answer, whatever a server's quirks.

    Feed each chunk to :meth:`add`, which returns its text piece (if any); :meth:`response`
    is the assembled :class:`ModelResponse`: tool calls merged by index (see
    :class:`_CallPieces` for names, ids and wrong types), the last usage reported (else an
    estimate from ``request``), the finish reason, and the calls the stream ended in the
    middle of. A chunk of any shape is read without raising.

    Args:
        request: the request answered, to estimate the usage from when the server reports
            none (``None``: zero usage).
        profile: the kind of server streaming (its deviations are read as it has them).
    """

    def __init__(
        self, request: ModelRequest | None = None, profile: ServerProfile = OPENAI_COMPATIBLE
    ) -> None:
        self._request = request
        self._profile = profile
        self._text: list[str] = []
        self._calls: dict[int, _CallPieces] = {}
        self._last: int | None = None  # the key of the call a piece without index continues
        self._usage: Usage | None = None
        self._finish: str | None = None
        self._broken = False

    def add(self, chunk: Any) -> str | None:
        """Take one chunk; return its text piece, or ``None`` when it has none."""
        self.add_usage(_field(chunk, "usage"))
        choice = _first(_field(chunk, "choices"))
        self.add_finish(_field(choice, "finish_reason"))
        delta = _field(choice, "delta")
        for piece in _items(_field(delta, "tool_calls")):
            self.add_call(_field(piece, "index"), piece)
        return self.add_text(_field(delta, "content"))

    def add_usage(self, raw: Any) -> None:
        """Take a ``usage`` field (one that reports nothing is left out)."""
        if reported(raw):
            self._usage = usage_from(raw)

    def add_finish(self, reason: Any) -> None:
        """Take a choice's ``finish_reason`` (the last one given counts)."""
        if isinstance(reason, str) and reason:
            self._finish = reason

    def add_text(self, content: Any) -> str | None:
        """Take a piece of the message's text; returns it, or ``None`` when it is empty."""
        text = _text(content)
        if text:
            self._text.append(text)
            return text
        return None

    def add_call(self, index: Any, piece: Any) -> None:
        """Take a piece of the tool call at ``index``.

        A piece without a usable index continues the last call, unless it brings an id of
        its own (a server that numbers nothing sends each call whole, with its id).
        """
        key = index if type(index) is int else self._key_without_index(piece)
        self._calls.setdefault(key, _CallPieces(self._profile.repeats_call_name)).add(piece)
        self._last = key

    def _key_without_index(self, piece: Any) -> int:
        if self._last is None:
            return 0
        call_id = _field(piece, "id")
        current = self._calls[self._last].id
        if isinstance(call_id, str) and call_id and current and call_id != current:
            return max(self._calls) + 1
        return self._last

    def drop_usage(self) -> None:
        """Forget the usage read so far: it was not the server's (litellm's own count of a
        stream the server sent no usage with), so :meth:`response` estimates it."""
        self._usage = None

    def cut(self) -> None:
        """The stream broke: a call not complete by now is cut off (see :meth:`response`)."""
        self._broken = True

    @property
    def calling(self) -> bool:
        """Whether a tool call has begun."""
        return bool(self._calls)

    def response(self) -> ModelResponse:
        """The whole answer streamed so far.

        A call is cut off when the reply ended before its arguments were whole JSON: the
        stream broke, or ended at the output limit (``length``) or without saying why.
        """
        calls = tuple(self._calls[i].call() for i in sorted(self._calls))
        ends_early = self._broken or self._finish in (None, FINISH_LENGTH)
        cut_off = tuple(
            call.id
            for key, call in zip(sorted(self._calls), calls, strict=True)
            if ends_early and not self._calls[key].whole(self._broken)
        )
        message = reply_message("".join(self._text) or None, calls)
        usage = self._usage
        if usage is None:
            usage = Usage() if self._request is None else estimated_usage(self._request, message)
        return ModelResponse(message, usage, self._finish, cut_off, calls)


class _CallPieces:
    """One tool call read from its pieces, whatever types a provider put in them.

    The run loop and the gate take names, arguments and ids as strings; a provider (or a
    hostile proxy) may send a number, a bool, null, a list or a dict in any field. Each
    field becomes a string here, at the one place the reply is read, so nothing after it
    has to guess. A name piece that is not a string keeps its text but is marked
    (``<not a string: 5>``): a tool named ``5`` must not run from ``"name": 5``, and no tool
    name can hold ``<``, so the gate refuses the call and tells the model what it sent.

    A name is set once: on a server that repeats it (``repeats_call_name``: llama.cpp sends
    it in every piece of a streamed call) a piece that equals the name so far adds nothing;
    one that starts with the name so far replaces it (a server that resends the growing
    name); anything else continues it (a name split over pieces). Arguments are joined as
    they come. An id may come in any piece, or never: a call without one gets ``call_<hex>``.
    """

    def __init__(self, repeats_name: bool = True) -> None:
        self._repeats_name = repeats_name
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []

    def add(self, piece: Any) -> None:
        """Take one piece (an SDK object or a dict; anything else carries nothing)."""
        call_id = _field(piece, "id")
        if call_id is not None and call_id != "":
            self.id = _text(call_id)
        function = _field(piece, "function")
        name = _field(function, "name")
        if isinstance(name, str):
            self._name(name)
        elif name is not None:
            self.name += f"<not a string: {_text(name)[:_SHOWN]}>"
        self.arguments.append(_text(_field(function, "arguments")))

    def _name(self, piece: str) -> None:
        if not piece or (piece == self.name and self._repeats_name):
            return
        if (
            piece.startswith(self.name) and piece != self.name
        ):  # the first piece, or the growing name resent
            self.name = piece
        else:
            self.name += piece

    def whole(self, broken: bool) -> bool:
        """Whether the arguments so far are one whole JSON value. None at all are whole (a
        call that takes no arguments) unless the stream broke: they may never have come."""
        text = "".join(self.arguments)
        if not text.strip():
            return not broken
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            return False
        return True

    def call(self) -> ToolCall:
        """The call, every field a string (the same id every time)."""
        if not self.id:
            self.id = f"call_{uuid.uuid4().hex[:24]}"
        return ToolCall(self.id, self.name, "".join(self.arguments))


_SHOWN = 40
"""How much of a name that is not a string its marked name shows."""


def _field(value: Any, key: str) -> Any:
    """``value[key]`` of a dict or ``value.key`` of an SDK object; ``None`` for anything else.

    A method is not a field: ``"text".index`` must not read as a piece's ``index``.
    """
    if isinstance(value, Mapping):
        return value.get(key)
    found = getattr(value, key, None)
    return None if callable(found) else found


def _items(value: Any) -> Sequence[Any]:
    """``value`` when it is a list of pieces; nothing otherwise."""
    return value if isinstance(value, (list, tuple)) else ()


def _first(value: Any) -> Any:
    """The first of a list of choices, ``None`` when there is none."""
    items = _items(value)
    return items[0] if items else None


def _text(value: Any) -> str:
    """A wire value as text: strings as they are, null as nothing, the rest as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


def _count(value: Any) -> int:
    """A token count: a non-negative number, else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0
    return max(0, int(min(value, 2**62)))
