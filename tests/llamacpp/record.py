"""Record a real llama.cpp server's answers to the oracle's kinds of requests.

    ORACLE_TEST_LLAMACPP_PYTHON=.venv-llamacpp/bin/python .venv/bin/python tests/llamacpp/record.py

(``make test-llamacpp RECORD=1`` does this.) It starts the server (tests/llamacpp/server.py),
sends each request of :data:`REQUESTS` over HTTP, and writes one JSON file per exchange to
``tests/fixtures/llamacpp/``: the request body, the status, the headers that matter and the
body (for a stream, the server-sent events exactly as they arrived, in order). The ordinary
test suite replays them (tests/llamacpp/replay.py) without the server.

The requests are shaped like the oracle's: a system prompt, the three meta-tools' schemas
beside an ordinary tool, ``stream_options.include_usage`` on streams, a follow-up that carries
the assistant's tool-call message and the tool's result. Two things differ, because a 270M
model and llama-cpp-python's function-calling format need them: a tool-call request names
its tool in ``tool_choice`` (without it this format shows the model no tools), and every
request sets ``temperature: 0`` and a ``seed`` so a re-recording changes little.
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
if not __package__:  # run as a script: tests/ is what the test suite imports from
    sys.path.insert(0, str(HERE.parent))

from llamacpp.server import (  # noqa: E402
    MODEL_ALIAS,
    PYTHON_VARIABLE,
    RunningServer,
    llama_python,
    llama_server,
)

from oracle_core.capabilities.meta_tools import META_TOOL_SCHEMAS  # noqa: E402
from oracle_core.testing.exchange import KEPT_HEADERS, Exchange, Recording  # noqa: E402

FIXTURES = HERE.parent / "fixtures" / "llamacpp"
"""Where the recordings are written and read."""

SYSTEM = "You are a helpful assistant. Answer briefly."
"""The system prompt of every recorded request."""

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
"""The ordinary tool the model is made to call, shown after the meta-tools."""

CALL_ID = "call_weather_1"
"""The id of the tool call in the follow-up requests."""

TOOL_RESULT = "Sunny, 21°C"
"""What the tool returned, in the follow-up requests."""


def _body(user: str, *, stream: bool = False, max_tokens: int = 48, **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL_ALIAS,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "seed": 7,
        **more,
    }
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    return body


def _tools() -> list[dict[str, Any]]:
    return [*copy.deepcopy(list(META_TOOL_SCHEMAS)), WEATHER_TOOL]


def _tool_call(stream: bool) -> dict[str, Any]:
    choice = {"type": "function", "function": {"name": "get_weather"}}
    return _body("What is the weather in Paris?", stream=stream, tools=_tools(), tool_choice=choice)


_KEEP = object()


def _follow_up(stream: bool, content: Any = "") -> dict[str, Any]:
    body = _body("What is the weather in Paris?", stream=stream, tools=_tools())
    assistant: dict[str, Any] = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": CALL_ID,
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    if content is not _KEEP:
        assistant["content"] = content
    body["messages"] += [
        assistant,
        {"role": "tool", "tool_call_id": CALL_ID, "content": TOOL_RESULT},
    ]
    return body


def _missing(stream: bool) -> dict[str, Any]:
    return _follow_up(stream, _KEEP)


def _null(stream: bool) -> dict[str, Any]:
    return _follow_up(stream, None)


def _length(stream: bool) -> dict[str, Any]:
    return _body("Count from 1 to 100, one number a line.", stream=stream, max_tokens=6)


def _text(stream: bool) -> dict[str, Any]:
    return _body("Say hello in five words.", stream=stream)


@dataclass(frozen=True)
class Planned:
    """One request to record: its name, what it shows, and how its body is made."""

    name: str
    about: str
    make: Callable[[bool], dict[str, Any]]


PLANNED = (
    Planned("text", "plain text answer", _text),
    Planned("tool_call", "a call of the tool named in tool_choice", _tool_call),
    Planned(
        "follow_up",
        'the answer after a tool call; the assistant message carries "content": ""',
        _follow_up,
    ),
    Planned(
        "missing_content",
        "the follow-up with no content on the assistant tool-call message: the server's "
        "template fails",
        _missing,
    ),
    Planned(
        "null_content",
        'the follow-up with "content": null on the assistant tool-call message',
        _null,
    ),
    Planned("length", "an answer cut off by max_tokens (finish_reason length)", _length),
)
"""Each is recorded twice: not streamed (``NAME.json``) and streamed (``NAME_stream.json``)."""


def send(url: str, body: dict[str, Any]) -> Exchange:
    """POST ``body`` to ``url``'s ``/chat/completions`` and keep the answer as it came."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=600)
    try:
        connection.request(
            "POST",
            f"{parts.path}/chat/completions",
            json.dumps(body),
            {"Content-Type": "application/json", "Authorization": "Bearer sk-local"},
        )
        answer = connection.getresponse()
        headers = {
            name.lower(): value
            for name, value in answer.getheaders()
            if name.lower() in KEPT_HEADERS
        }
        if not headers.get("content-type", "").startswith("text/event-stream"):
            return Exchange(answer.status, headers, answer.read().decode())
        events: list[str] = []
        pending = ""
        while line := answer.readline().decode():
            pending += line
            if not line.strip():  # a blank line ends an event
                events.append(pending)
                pending = ""
        if pending:
            events.append(pending)
        return Exchange(answer.status, headers, "", tuple(events))
    finally:
        connection.close()


def scrubbed(exchange: Exchange, folders: tuple[tuple[str, Path], ...]) -> Exchange:
    """``exchange`` with each folder of this machine written as its placeholder
    (``(placeholder, folder)`` pairs; the longest folder first)."""

    def scrub(text: str) -> str:
        for placeholder, folder in sorted(folders, key=lambda f: -len(str(f[1]))):
            text = text.replace(str(folder), placeholder)
        return text

    return Exchange(
        exchange.status,
        exchange.headers,
        scrub(exchange.body),
        tuple(scrub(event) for event in exchange.events),
    )


def record(server: RunningServer, out: Path) -> list[Path]:
    """Send every planned request, streamed and not, and write one recording each."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for planned in PLANNED:
        for stream in (False, True):
            body = planned.make(stream)
            name = f"{planned.name}_stream" if stream else planned.name
            about = f"{planned.about} ({'streamed' if stream else 'not streamed'})"
            exchange = scrubbed(send(server.url, body), server.folders)
            recording = Recording(name, body, exchange, about, server.info.as_dict())
            path = out / f"{name}.json"
            text = json.dumps(recording.as_dict(), indent=2, ensure_ascii=False)
            path.write_text(text + "\n", encoding="utf-8")
            written.append(path)
            print(f"{path.name}: HTTP {exchange.status}", flush=True)
    return written


def main(argv: list[str] | None = None) -> int:
    """Record the fixtures; the exit status is 2 when no llama.cpp Python is given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=llama_python(), help=f"default: ${PYTHON_VARIABLE}")
    parser.add_argument("--out", type=Path, default=FIXTURES)
    args = parser.parse_args(argv)
    if not args.python:
        print(
            f"set {PYTHON_VARIABLE} (or --python) to a Python with llama_cpp.server",
            file=sys.stderr,
        )
        return 2
    with (
        tempfile.TemporaryDirectory() as folder,
        llama_server(args.python, Path(folder) / "server.log") as server,
    ):
        record(server, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
