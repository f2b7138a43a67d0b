"""An OpenAI-compatible chat completions server on 127.0.0.1, scripted by tests.

Requests reach it over real HTTP through litellm, exactly as they would reach a provider, so
a test sees what the model was shown (system prompt, tools, messages) at every step.
A reply may also be a recorded answer of a real server (``Reply.replay(exchange)``, see
:mod:`oracle_core.testing.exchange`), sent exactly as recorded.
Plugin authors usually meet it through :class:`~oracle_core.testing.HTTPScriptedModel` and
the ``oracle_http_model`` fixture, which wrap it; replies are scripted with the same
:class:`Reply` values as the in-process :class:`~oracle_core.testing.ScriptedModel`.

    with FakeOpenAI() as server:
        server.script(Reply.call("load_capability", {"names": ["weather"]}), Reply.text("Sunny"))
        oracle = Oracle(model=server.model(), ...)
        ...
        assert server.requests[1].tool_names == [...]
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from oracle_core.testing.exchange import Exchange
from oracle_core.testing.script import Reply, ReplyQueue, Responder, SeenRequest

__all__ = ["FakeOpenAI", "Reply", "Responder", "SeenRequest"]


EMBEDDING_DIMENSIONS = 64
"""Length of the vectors the fake ``/v1/embeddings`` route returns."""


def hashed_embedding(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """A deterministic bag-of-words vector: each lowercase word adds ±1 at its hashed slot.

    Texts that share words point the same way, so semantic search can be tested offline.
    """
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[digest[0] % dimensions] += 1.0 if digest[1] % 2 else -1.0
    return vector


class FakeOpenAI:
    """A scripted OpenAI-compatible server (``/v1/chat/completions``) on 127.0.0.1.

    ``/v1/embeddings`` answers every request with :func:`hashed_embedding` vectors and
    records the inputs in :attr:`embedding_inputs`.

    Queue replies with :meth:`script`, or answer from a function with :meth:`respond_with`.
    Every request is recorded in :attr:`requests`; a responder that raised is recorded in
    :attr:`errors` (and its request answered with HTTP 500). Use it as a context manager, or
    call :meth:`start` and :meth:`stop`.

    Attributes:
        replies: the queue that answers and records its requests.
    """

    def __init__(self) -> None:
        self.replies = ReplyQueue()
        self.embedding_inputs: list[list[str]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def requests(self) -> list[SeenRequest]:
        """Every request received, in order."""
        return self.replies.requests

    @property
    def errors(self) -> list[BaseException]:
        """The exceptions raised by reply functions, in order."""
        return self.replies.errors

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
        self.replies.script(*replies)

    def respond_with(self, responder: Responder | None) -> None:
        """Answer every request without a queued reply from ``responder(request)``."""
        self.replies.respond_with(responder)

    @property
    def pending(self) -> int:
        """Queued replies not yet used."""
        return self.replies.pending

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
            self._send_body(data)

        def _send_body(self, data: bytes) -> None:
            """Ends the headers with a Content-Length and writes ``data`` as the whole body."""
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_chunked(self, pieces: Iterable[str | bytes]) -> None:
            """Ends the headers with chunked transfer encoding and sends each piece as its own
            chunk, flushed as it goes, then the terminating empty chunk."""
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in pieces:
                data = piece.encode() if isinstance(piece, str) else piece
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

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
            if self.path.rstrip("/").endswith("/embeddings"):
                self._embeddings(body)
                return
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(
                    404, {"error": {"message": "not found", "type": "invalid_request_error"}}
                )
                return
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = SeenRequest(body, headers)
            reply = owner.replies.answer(request)
            if reply.hold is not None:
                reply.hold.wait(timeout=30)
            if reply.exchange is not None:
                self._replay(reply.exchange)
                return
            if reply.failed:
                error = {
                    "message": reply.content or "error",
                    "type": "server_error",
                    "code": reply.status,
                }
                self._json(reply.status, {"error": error})
                return
            usage, calls = reply.usage_for(request).as_dict(), reply.openai_tool_calls()
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

        def _replay(self, exchange: Exchange) -> None:
            self.send_response(exchange.status)
            for name, value in exchange.headers.items():
                self.send_header(name, value)
            if not exchange.stream:
                self._send_body(exchange.body.encode())
                return
            # Each recorded event goes out as its own chunk, as the server flushed it.
            self._send_chunked(exchange.events)

        def _embeddings(self, body: dict[str, Any]) -> None:
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else [str(t) for t in texts or []]
            owner.embedding_inputs.append(texts)
            words = sum(len(t.split()) for t in texts)
            self._json(200, {
                "object": "list",
                "data": [{"object": "embedding", "index": i, "embedding": hashed_embedding(t)} for i, t in enumerate(texts)],
                "model": body.get("model", "fake-embedding"),
                "usage": {"prompt_tokens": words, "total_tokens": words},
            })  # fmt: skip

        def _stream(
            self, reply: Reply, calls: list[dict[str, Any]], usage: dict[str, int], model: str
        ) -> None:
            # Chunked transfer encoding keeps the connection open after the stream, as a
            # provider's does: a client pays for one connection, not one per streamed call.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            events = [f"data: {json.dumps(c)}\n\n" for c in _chunks(reply, calls, usage, model)]
            self._send_chunked(_paced([*events, "data: [DONE]\n\n"], reply.pause))

    return Handler


def _paced(events: list[str], pause: threading.Event | None) -> Iterator[str]:
    """``events``, waiting for ``pause`` after the second (the role, then the first text)."""
    for index, event in enumerate(events):
        yield event
        if pause is not None and index == 1:
            pause.wait(timeout=30)


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
    for piece in reply.text_pieces():
        yield chunk({"content": piece})
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
