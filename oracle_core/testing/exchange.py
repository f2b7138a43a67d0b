"""Recorded HTTP answers: what a real model server sent, kept to be sent again byte for byte.

An :class:`Exchange` is one answer of a server to one request: its status, the headers that
matter, and its body, either whole (a JSON answer) or, for a stream, the server-sent events
in the order and pieces they arrived. :class:`~oracle_core.testing.FakeOpenAI` replays one
when a test queues ``Reply.replay(exchange)``, so a client meets exactly what the real server
sent (its chunk shapes, its quirks, its errors) without the server.

A recording is a small JSON file (see :func:`load_recording`): ``{"request": {...},
"response": {...}}``, written by a recorder such as ``tests/llamacpp/record.py``.

This module imports only the standard library.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["KEPT_HEADERS", "Exchange", "Recording", "load_recording"]

KEPT_HEADERS = ("content-type",)
"""The response headers a recording keeps: what a client reads to parse the body. The rest
(date, server, length, request ids, timings) change every time and no client reads them."""

EVENT_STREAM = "text/event-stream"
"""The content type of a streamed answer."""


@dataclass(frozen=True)
class Exchange:
    """One recorded HTTP answer.

    Attributes:
        status: the HTTP status.
        headers: the headers kept (:data:`KEPT_HEADERS`), names in lower case.
        body: the whole body of an answer that is not a stream (usually JSON text).
        events: a stream's body in the pieces it arrived in: each a server-sent event with
            its blank-line separator, exactly as sent (``"data: {...}\\r\\n\\r\\n"``).
    """

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: str = ""
    events: tuple[str, ...] = ()

    @property
    def stream(self) -> bool:
        """Whether the answer is a stream of server-sent events."""
        return self.headers.get("content-type", "").startswith(EVENT_STREAM)

    @property
    def raw(self) -> str:
        """The whole body as sent: the events joined, or :attr:`body`."""
        return "".join(self.events) if self.stream else self.body

    def data(self) -> list[Any]:
        """A stream's ``data:`` payloads in order, JSON decoded where they are JSON
        (``[DONE]`` and other text stay strings)."""
        found: list[Any] = []
        for line in self.raw.splitlines():
            if line.startswith("data:"):
                payload = line[len("data:") :].strip()
                try:
                    found.append(json.loads(payload))
                except json.JSONDecodeError:
                    found.append(payload)
        return found

    def json(self) -> Any:
        """The body of an answer that is not a stream, JSON decoded."""
        return json.loads(self.body)

    @classmethod
    def of_events(cls, events: Sequence[str], status: int = 200) -> Exchange:
        """A stream answer made of ``events`` (each sent as it is, as one piece)."""
        return cls(status, {"content-type": f"{EVENT_STREAM}; charset=utf-8"}, "", tuple(events))

    @classmethod
    def of_json(cls, status: int, value: Any) -> Exchange:
        """An answer whose body is ``value`` as JSON."""
        return cls(status, {"content-type": "application/json"}, json.dumps(value))

    def as_dict(self) -> dict[str, Any]:
        """The exchange as a recording's ``response`` (see :func:`Exchange.from_dict`).

        A JSON body is kept as JSON (so a recording reads well and diffs well); a stream keeps
        its raw events.
        """
        out: dict[str, Any] = {"status": self.status, "headers": dict(self.headers)}
        if self.stream:
            out["events"] = list(self.events)
            return out
        try:
            out["json"] = json.loads(self.body)
        except json.JSONDecodeError:
            out["body"] = self.body
        return out

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Exchange:
        """The exchange a recording's ``response`` describes.

        Raises:
            ValueError: a field is missing or of the wrong type (the message names it).
        """
        status = value.get("status")
        if not isinstance(status, int):
            raise ValueError(f"a recorded response needs an integer 'status', not {status!r}")
        headers = {str(k).lower(): str(v) for k, v in dict(value.get("headers") or {}).items()}
        if "events" in value:
            events = value["events"]
            if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
                raise ValueError("a recorded response's 'events' must be a list of strings")
            return cls(status, headers, "", tuple(events))
        if "json" in value:
            return cls(status, headers, json.dumps(value["json"]))
        return cls(status, headers, str(value.get("body", "")))


@dataclass(frozen=True)
class Recording:
    """One recorded request and the server's answer to it.

    Attributes:
        name: the recording's name (its file name without ``.json``).
        request: the JSON body that was sent.
        response: what the server answered.
        about: what the recording shows, in a sentence.
        server: what answered (server, version, model, chat format).
    """

    name: str
    request: Mapping[str, Any]
    response: Exchange
    about: str = ""
    server: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The recording as it is written to its JSON file."""
        return {
            "about": self.about,
            "server": dict(self.server),
            "request": dict(self.request),
            "response": self.response.as_dict(),
        }


def load_recording(path: Path) -> Recording:
    """Read the recording in the JSON file ``path``.

    Raises:
        ValueError: the file is not a recording (the message names the file and the field).
    """
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(value, dict) or not isinstance(value.get("request"), dict):
            raise ValueError("it needs a 'request' object")
        if not isinstance(value.get("response"), dict):
            raise ValueError("it needs a 'response' object")
        response = Exchange.from_dict(value["response"])
    except (ValueError, OSError) as error:
        raise ValueError(f"{path} is not a recording: {error}") from error
    return Recording(
        path.stem,
        value["request"],
        response,
        str(value.get("about", "")),
        dict(value.get("server") or {}),
    )
