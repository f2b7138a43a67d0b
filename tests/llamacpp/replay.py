"""llama.cpp's recorded answers, replayed by the fake OpenAI server on 127.0.0.1.

:class:`LlamaCppReplay` is a responder for :class:`~oracle_core.testing.FakeOpenAI`: it answers
each request with the recording (tests/fixtures/llamacpp/) of the same kind, chosen by a
simple rule (:meth:`LlamaCppReplay.kind`), and refuses an assistant message without
``content`` (or with ``null``) as the real server's template does, with its recorded error.

    with FakeOpenAI() as server:
        server.respond_with(LlamaCppReplay.load())

What the recordings show is listed in docs/testing.md ("Recorded traffic").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle_core.testing.exchange import Recording, load_recording
from oracle_core.testing.script import Reply, Responder, SeenRequest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llamacpp"
"""The recordings made by tests/llamacpp/record.py."""

KINDS = (
    "text",
    "tool_call",
    "follow_up",
    "missing_content",
    "null_content",
    "length",
)
"""The kinds of request recorded; each as ``KIND.json`` and ``KIND_stream.json``."""


def content_problem(messages: list[dict[str, Any]]) -> str | None:
    """``missing_content`` or ``null_content`` when an assistant message lacks text the
    template reads; ``None`` when every assistant message has a string ``content``."""
    for message in messages:
        if message.get("role") != "assistant":
            continue
        if "content" not in message:
            return "missing_content"
        if message["content"] is None:
            return "null_content"
    return None


@dataclass(frozen=True)
class LlamaCppReplay:
    """Answers requests with llama.cpp's recorded answers (a FakeOpenAI responder).

    Attributes:
        recordings: the recordings by name (``text``, ``text_stream``, ...).
    """

    recordings: Mapping[str, Recording]

    @classmethod
    def load(cls, folder: Path = FIXTURES) -> LlamaCppReplay:
        """The recordings of ``folder``: every kind, streamed and not."""
        names = [f"{k}{s}" for k in KINDS for s in ("", "_stream")]
        missing = [n for n in names if not (folder / f"{n}.json").exists()]
        if missing:
            raise FileNotFoundError(
                f"{folder} lacks {', '.join(missing)}: record them with "
                "`make test-llamacpp RECORD=1`"
            )
        return cls({n: load_recording(folder / f"{n}.json") for n in names})

    def kind(self, request: SeenRequest) -> str:
        """Which recording answers ``request``.

        In order: an assistant message without ``content`` (``missing_content``) or with
        ``null`` (``null_content``), answered as the server answered it; a tool message
        (``follow_up``); a ``tool_choice`` that names a tool (``tool_call``: as on the real
        server, whose function-calling format shows the model no tools without one); a
        ``max_tokens`` as small as the recorded cut-off request's (``length``); else ``text``.
        ``_stream`` is added for a stream.
        """
        body = request.body
        kind = content_problem(request.messages)
        if kind is None:
            limit = self.recordings["length"].request.get("max_tokens")
            max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
            if any(m.get("role") == "tool" for m in request.messages):
                kind = "follow_up"
            elif isinstance(body.get("tool_choice"), dict):
                kind = "tool_call"
            elif isinstance(max_tokens, int) and isinstance(limit, int) and max_tokens <= limit:
                kind = "length"
            else:
                kind = "text"
        return f"{kind}_stream" if request.stream else kind

    def __call__(self, request: SeenRequest) -> Reply:
        """The recorded answer to ``request``."""
        return Reply.replay(self.recordings[self.kind(request)].response)

    def refusing(self, answer: Responder) -> Responder:
        """A responder that answers as ``answer`` does, except that it refuses an assistant
        message without ``content`` (or with ``null``) with llama.cpp's recorded answer."""

        def respond(request: SeenRequest) -> Reply:
            if content_problem(request.messages) is None:
                return answer(request)
            return self(request)

        return respond
