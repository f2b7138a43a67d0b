"""A raw loopback model server for the wire tests: scripted chunks, sent as the test says."""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from support import LoopbackServer


@dataclass
class Scripted:
    """One answer of :class:`WireServer`: SSE chunks (a stream) or a JSON body, or a status."""

    chunks: list[Any] | None = None
    body: dict[str, Any] | None = None
    status: int = 200
    hang_up: bool = False  # close the connection after the chunks, without [DONE]
    stall: bool = False  # answer nothing until the server closes


class WireServer(LoopbackServer):
    """A chat completions server on 127.0.0.1 that answers exactly what it is scripted."""

    def __init__(self) -> None:
        self.script: list[Scripted] = []
        self.bodies: list[dict[str, Any]] = []
        self.closing = threading.Event()
        self.start()

    def close(self) -> None:
        self.closing.set()
        super().close()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append(body)
                answer = owner.script.pop(0) if owner.script else Scripted(body=TEXT_BODY)
                if answer.stall:
                    owner.closing.wait(timeout=30)
                    return
                if answer.chunks is None:
                    data = json.dumps(answer.body or {"error": {"message": "scripted"}})
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data.encode())
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for one in answer.chunks:
                    self.wfile.write(f"data: {json.dumps(one)}\n\n".encode())
                    self.wfile.flush()
                if answer.hang_up:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        return Handler


TEXT_BODY = {
    "choices": [{"message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 20, "completion_tokens": 2},
}
