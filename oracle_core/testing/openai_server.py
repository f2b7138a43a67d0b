"""An OpenAI-compatible chat completions server on 127.0.0.1, scripted by tests.

Requests reach it over real HTTP through litellm, exactly as they would reach a provider, so
a test sees what the model was shown (system prompt, tools, messages) at every step.
Plugin authors usually meet it through :class:`~oracle_core.testing.ScriptedModel` and the
``oracle_model`` fixture, which wrap it.

    with FakeOpenAI() as server:
        server.script(Reply.call("load_capability", {"names": ["weather"]}), Reply.text("Sunny"))
        oracle = Oracle(model=server.model(), ...)
        ...
        assert server.requests[1].tool_names == [...]
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer of the fake model.

    Attributes:
        content: the assistant's text.
        tool_calls: ``(name, arguments)`` pairs; arguments may be a dict or raw text (so a
            test can send arguments that are not JSON).
        status: an HTTP status; anything but 200 answers with an OpenAI-style error body.
        usage: ``(prompt_tokens, completion_tokens)``; default: a rough count of the request.
        hold: an event the server waits on before answering (to observe in-flight state).
    """

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    status: int = 200
    usage: tuple[int, int] | None = None
    hold: threading.Event | None = None

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
        """An HTTP error answer."""
        return cls(content=message, status=status)


@dataclass
class SeenRequest:
    """A request the fake server received, decoded.

    Attributes:
        body: the JSON body as sent.
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


class FakeOpenAI:
    """A scripted OpenAI-compatible server (``/v1/chat/completions``) on 127.0.0.1.

    Queue replies with :meth:`script`, or answer from a function with :meth:`respond_with`.
    Every request is recorded in :attr:`requests`; a responder that raised is recorded in
    :attr:`errors` (and its request answered with HTTP 500). Use it as a context manager, or
    call :meth:`start` and :meth:`stop`.
    """

    def __init__(self) -> None:
        self.requests: list[SeenRequest] = []
        self.errors: list[BaseException] = []
        self._replies: deque[Reply | Responder] = deque()
        self._responder: Responder | None = None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The API base, ``http://127.0.0.1:PORT/v1``."""
        if self._server is None:
            raise RuntimeError("the fake server is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def model(self, name: str = "fake-model", **options: Any) -> Any:
        """A :class:`~oracle_core.models.litellm.LiteLLMModel` pointed at this server."""
        from oracle_core.models.litellm import LiteLLMModel

        return LiteLLMModel(f"openai/{name}", api_base=self.url, api_key="sk-fake", **options)

    def script(self, *replies: Reply | Responder) -> None:
        """Queue replies, answered in order, one per request.

        A reply may be a function of the request (a :data:`Responder`) that answers it.
        """
        with self._lock:
            self._replies.extend(replies)

    def respond_with(self, responder: Responder | None) -> None:
        """Answer every request without a queued reply from ``responder(request)``."""
        self._responder = responder

    @property
    def pending(self) -> int:
        """Queued replies not yet used."""
        return len(self._replies)

    def _next(self, request: SeenRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            queued = self._replies.popleft() if self._replies else None
        if isinstance(queued, Reply):
            return queued
        responder = queued or self._responder
        if responder is None:
            return Reply.error(500, "fake server: no scripted reply left for this request")
        try:
            reply = responder(request)
            if not isinstance(reply, Reply):
                raise TypeError(f"returned {type(reply).__name__}, not a Reply")
        except Exception as error:
            self.errors.append(error)
            name = getattr(responder, "__name__", "reply function")
            return Reply.error(500, f"{name} raised {type(error).__name__}: {error}")
        return reply

    def start(self) -> FakeOpenAI:
        """Start serving on a free port of 127.0.0.1 in a background thread."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.02,), name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _completion(reply: Reply, request: SeenRequest) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    calls = [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for name, args in reply.tool_calls
    ]
    prompt, completion = reply.usage or (
        len(json.dumps(request.body)) // 4,
        len(reply.content or "") // 4 + 10 * len(calls),
    )
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return usage, calls


def _handler(owner: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Without these, headers and body go out as separate small segments and Nagle's
        # algorithm meets delayed ACKs: every response would wait ~40 ms.
        disable_nagle_algorithm = True
        wbufsize = 64 * 1024

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(
                    200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
                )
            else:
                self._json(
                    404, {"error": {"message": "not found", "type": "invalid_request_error"}}
                )

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                self._json(
                    400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}}
                )
                return
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(
                    404, {"error": {"message": "not found", "type": "invalid_request_error"}}
                )
                return
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = SeenRequest(body, headers)
            reply = owner._next(request)
            if reply.hold is not None:
                reply.hold.wait(timeout=30)
            if reply.status != 200:
                error = {
                    "message": reply.content or "error",
                    "type": "server_error",
                    "code": reply.status,
                }
                self._json(reply.status, {"error": error})
                return
            usage, calls = _completion(reply, request)
            model = body.get("model", "fake-model")
            if request.stream:
                self._stream(reply, calls, usage, model)
                return
            self._json(200, {
                "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content, **({"tool_calls": calls} if calls else {})},
                    "finish_reason": "tool_calls" if calls else "stop",
                }],
                "usage": usage,
            })  # fmt: skip

        def _stream(
            self, reply: Reply, calls: list[dict[str, Any]], usage: dict[str, int], model: str
        ) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for chunk in _chunks(reply, calls, usage, model):
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler


def _chunks(
    reply: Reply, calls: list[dict[str, Any]], usage: dict[str, int], model: str
) -> Iterator[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    text = reply.content or ""
    for start in range(0, len(text), 8):
        yield chunk({"content": text[start : start + 8]})
    for index, call in enumerate(calls):
        fn = call["function"]
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": fn["name"], "arguments": ""},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": fn["arguments"]}}]})
    yield chunk({}, "tool_calls" if calls else "stop")
    yield {**base, "choices": [], "usage": usage}
