"""What each kind of model server accepts, and how it deviates from OpenAI's API: one table.

Servers that call themselves OpenAI-compatible differ in small ways that break a run: a
chat template that fails on a missing key, a stream that repeats what it already sent. Each
such difference is a column of :class:`ServerProfile`, and each kind of server a row of
:data:`PROFILES`; the request builder (:func:`~oracle_core.models.wire.wire_messages`) and
the stream assembler (:class:`~oracle_core.models.wire.StreamAssembler`) read the row of the
server a model talks to (:func:`profile_for`), never an ``if`` of their own. A new quirk is
one column (or one row) and its case in ``tests/models/test_model_profiles.py``.

A server reached as ``openai/<model>`` at an ``api_base`` could be any of them, so a server
the table cannot place gets :data:`OPENAI_COMPATIBLE`, which assumes every deviation it
knows of: the shapes it sends are the ones every server accepts, and the readings it makes
are harmless where a server does not deviate.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["OPENAI_COMPATIBLE", "PROFILES", "ServerProfile", "profile_for"]


@dataclass(frozen=True)
class ServerProfile:
    """One kind of model server: how to know it, and what it accepts.

    Attributes:
        name: the server, as people call it (``llama.cpp``).
        prefixes: litellm provider prefixes of model strings that reach it (``ollama/``).
        ports: the ports its own server listens on unless told otherwise, to know it by an
            ``api_base`` when the model string says only ``openai/``.
        names: starts of the model names of a provider's own API, known by a model string
            without ``api_base``: a bare name (``claude-sonnet-4``), or one after
            ``name_prefix``.
        name_prefix: the litellm prefix its bare names may carry (``openai/``).
        tool_only_content: the ``content`` sent with an assistant message that only calls
            tools. ``""``: llama.cpp's function-calling templates fail (HTTP 500) on a
            missing key and on ``null``; OpenAI's API takes ``""`` as well as either, and
            litellm reshapes it where a provider needs another shape (Anthropic and
            Bedrock drop the empty text block), so ``""`` is sent to every server today.
            ``None`` would send ``null`` (the direct path then leaves the key out).
        repeats_call_name: its stream sends a tool call's whole name again in every piece
            of the call (llama.cpp); a piece that equals the name read so far then adds
            nothing, where it would otherwise continue the name.
    """

    name: str
    prefixes: tuple[str, ...] = ()
    ports: tuple[int, ...] = ()
    names: tuple[str, ...] = ()
    name_prefix: str = ""
    tool_only_content: str | None = ""
    repeats_call_name: bool = False

    def matches(self, model: str, api_base: str | None) -> bool:
        """Whether a model string (and its ``api_base``) reaches this kind of server."""
        if self.prefixes and model.startswith(self.prefixes):
            return True
        if api_base:
            return _port(api_base) in self.ports
        if self.name_prefix and model.startswith(self.name_prefix):
            model = model[len(self.name_prefix) :]
        return bool(self.names) and "/" not in model and model.lower().startswith(self.names)


OPENAI_COMPATIBLE = ServerProfile(
    "OpenAI-compatible server",
    tool_only_content="",
    repeats_call_name=True,
)
"""The row of a server the table cannot place: every known deviation assumed."""

PROFILES: tuple[ServerProfile, ...] = (
    ServerProfile(
        "llama.cpp",
        ports=(8080,),
        tool_only_content="",  # its templates fail on null and on a missing key
        repeats_call_name=True,  # llama-server repeats the name in every streamed piece
    ),
    ServerProfile("Ollama", prefixes=("ollama/", "ollama_chat/"), ports=(11434,)),
    ServerProfile("vLLM", prefixes=("hosted_vllm/", "vllm/"), ports=(8000,)),
    ServerProfile("LM Studio", prefixes=("lm_studio/",), ports=(1234,)),
    ServerProfile(
        "OpenAI",
        names=("gpt-", "o1", "o3", "o4", "chatgpt-", "codex"),
        name_prefix="openai/",
    ),
    ServerProfile(
        "Anthropic (through litellm)",
        prefixes=("anthropic/",),
        names=("claude",),
    ),
)
"""Every kind of server the oracle knows, first match wins; see :class:`ServerProfile`."""


def profile_for(model: str, api_base: str | None = None) -> ServerProfile:
    """The row of the server ``model`` (at ``api_base``) talks to; :data:`OPENAI_COMPATIBLE`
    when no row knows it."""
    for profile in PROFILES:
        if profile.matches(model, api_base):
            return profile
    return OPENAI_COMPATIBLE


def _port(url: str) -> int | None:
    """The port of ``url``, said or implied by its scheme; ``None`` when it is no URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if port is not None:
        return port
    return {"http": 80, "https": 443}.get(parts.scheme)
