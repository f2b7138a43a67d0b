"""What a scripted test model answers, and what it was asked: shared by every scripted path.

:class:`Reply` is one scripted answer and :class:`SeenRequest` one recorded request (an
OpenAI chat completions body). :class:`ReplyQueue` pairs them: it hands out queued replies
in order and records each request it answered. The in-process
:class:`~oracle_core.testing.ScriptedModel`, the HTTP
:class:`~oracle_core.testing.HTTPScriptedModel` and the
:class:`~oracle_core.testing.FakeOpenAI` server all answer through one, so a reply means the
same thing, and a recorded request looks the same, whichever path a test uses.

This module imports only the standard library and the core's message values: no litellm,
no HTTP client, no server.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oracle_core.models.base import tool_call
from oracle_core.values.messages import Usage

if TYPE_CHECKING:
    from oracle_core.testing.exchange import Exchange

STREAM_PIECE = 8
"""Characters per streamed text piece, so a streamed answer arrives in several pieces."""


@dataclass
class Reply:
    """One scripted answer of a test model.

    Attributes:
        content: the assistant's text.
        tool_calls: ``(name, arguments)`` pairs; arguments may be a dict or raw text (so a
            test can send arguments that are not JSON).
        status: an HTTP status; anything but 200 is the provider failing with ``content`` as
            its error message.
        usage: ``(prompt_tokens, completion_tokens)``; default: a rough count of the request.
        hold: an event to wait for before answering (to observe in-flight state).
        pause: an event a streamed answer waits for after its first text piece (to observe
            a client show text as it arrives); only :class:`~oracle_core.testing.FakeOpenAI`
            streams over HTTP, so only it pauses.
        exchange: a recorded HTTP answer the server sends instead, exactly as recorded
            (:meth:`replay`); only :class:`~oracle_core.testing.FakeOpenAI` can send one.
    """

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    status: int = 200
    usage: tuple[int, int] | None = None
    hold: threading.Event | None = None
    exchange: Exchange | None = None
    pause: threading.Event | None = None

    @classmethod
    def text(cls, content: str) -> Reply:
        """A final text answer."""
        return cls(content=content)

    @classmethod
    def call(cls, name: str, arguments: dict[str, Any] | str | None = None) -> Reply:
        """A single tool call."""
        return cls(tool_calls=[(name, arguments if arguments is not None else {})])

    @classmethod
    def calls(cls, *calls: tuple[str, dict[str, Any] | str]) -> Reply:
        """Several tool calls in one response (parallel tool calls)."""
        return cls(tool_calls=list(calls))

    @classmethod
    def error(cls, status: int, message: str = "scripted error") -> Reply:
        """The provider failing with HTTP ``status``."""
        return cls(content=message, status=status)

    @classmethod
    def replay(cls, exchange: Exchange) -> Reply:
        """Send ``exchange`` (a recorded answer: status, headers, body or stream) as it is."""
        return cls(exchange=exchange)

    @property
    def failed(self) -> bool:
        """Whether this reply is an error rather than an answer."""
        return self.status != 200

    def openai_tool_calls(self) -> list[dict[str, Any]]:
        """The tool calls as OpenAI ``tool_calls`` entries, each with a fresh call id."""
        return [
            tool_call(name, arguments, f"call_{uuid.uuid4().hex[:12]}")
            for name, arguments in self.tool_calls
        ]

    def usage_for(self, request: SeenRequest) -> Usage:
        """The token use reported for answering ``request``: :attr:`usage`, or an estimate."""
        if self.usage is not None:
            return Usage(*self.usage)
        return Usage(
            len(json.dumps(request.body)) // 4,
            len(self.content or "") // 4 + 10 * len(self.tool_calls),
        )

    def text_pieces(self) -> Iterator[str]:
        """The answer's text in the pieces a stream sends."""
        text = self.content or ""
        for start in range(0, len(text), STREAM_PIECE):
            yield text[start : start + STREAM_PIECE]


@dataclass
class SeenRequest:
    """A request a scripted model or server received: the OpenAI chat completions body.

    Attributes:
        body: the JSON body, as sent over HTTP (or as it would have been).
        headers: the HTTP headers, names in lower case.
    """

    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages sent, system message included."""
        return list(self.body.get("messages", []))

    @property
    def system_prompt(self) -> str:
        """The system message's text ("" if none)."""
        first = self.messages[0] if self.messages else {}
        return str(first.get("content") or "") if first.get("role") == "system" else ""

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool definitions sent."""
        return list(self.body.get("tools") or [])

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools sent, in order."""
        return [t["function"]["name"] for t in self.tools]

    @property
    def tool_results(self) -> list[str]:
        """What the model reads back on this step: the tool messages after its last call."""
        results: list[str] = []
        for message in reversed(self.messages):
            if message.get("role") != "tool":
                break
            results.append(str(message.get("content") or ""))
        return results[::-1]

    @property
    def stream(self) -> bool:
        """Whether the client asked for a stream."""
        return bool(self.body.get("stream"))


Responder = Callable[[SeenRequest], Reply]
"""A function that answers one request with a :class:`Reply`."""


class ReplyQueue:
    """Replies answered in order, one per request, and every request answered.

    A queued reply may be a :data:`Responder` (a function of the request). A request with
    nothing queued is answered by the fallback responder (:meth:`respond_with`), or else with
    an HTTP 500 error saying no reply was left. A responder that raises is recorded in
    :attr:`errors`, and its request answered with an HTTP 500 error naming the exception.
    Safe to use from several threads.
    """

    def __init__(self) -> None:
        self.requests: list[SeenRequest] = []
        self.errors: list[BaseException] = []
        self._replies: deque[Reply | Responder] = deque()
        self._fallback: Responder | None = None
        self._lock = threading.Lock()

    def script(self, *replies: Reply | Responder) -> None:
        """Queue replies, answered in order, one per request."""
        with self._lock:
            self._replies.extend(replies)

    def respond_with(self, responder: Responder | None) -> None:
        """Answer every request without a queued reply from ``responder(request)``."""
        self._fallback = responder

    @property
    def pending(self) -> int:
        """Queued replies not used yet."""
        return len(self._replies)

    def index(self, request: SeenRequest) -> int:
        """The position of ``request`` among the requests answered (0 for the first)."""
        with self._lock:
            return next(i for i, seen in enumerate(self.requests) if seen is request)

    def answer(self, request: SeenRequest) -> Reply:
        """Record ``request`` and return its reply."""
        with self._lock:
            self.requests.append(request)
            queued = self._replies.popleft() if self._replies else None
        if isinstance(queued, Reply):
            return queued
        responder = queued or self._fallback
        if responder is None:
            return Reply.error(500, "no scripted reply left for this request")
        try:
            reply = responder(request)
            if not isinstance(reply, Reply):
                raise TypeError(f"returned {type(reply).__name__}, not a Reply")
        except Exception as error:
            self.errors.append(error)
            name = getattr(responder, "__name__", "reply function")
            return Reply.error(500, f"{name} raised {type(error).__name__}: {error}")
        return reply
