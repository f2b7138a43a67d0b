"""Prompts and resources a plugin offers beside its tools, through ``oracle_prompts`` and
``oracle_resources``.

Pure values: a :class:`Prompt` is a named template a person picks in an MCP client (a slash
command, a menu entry) and the oracle renders with its arguments; a :class:`Resource` is a
document the client may read by its URI. Both are exported over MCP (``oracle mcp``,
``/mcp``) under the capability gate's rule for tools: an ``always`` or ``silent`` plugin's
are listed at once, an ``on-demand`` plugin's only once the session's thread loaded it.

A bad value raises :class:`ValueError` naming the field and the fix; the hook that returned
it is then reported naming its plugin.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

PROMPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""Prompt and argument names: 1 to 64 letters, digits, ``_``, ``.`` or ``-``, starting with a
letter or digit (what every MCP client can show as a command)."""

URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]{1,2000}")
"""A resource URI: a scheme, a colon, then no whitespace (``notes://index``, ``file:///a``)."""

DESCRIPTION_MAX = 1024
"""Characters a prompt's, argument's or resource's description may have."""

Role = Literal["user", "assistant"]
"""Who says a rendered prompt message."""

PromptMessages = str | Sequence[Mapping[str, Any]]
"""What a prompt's ``render`` returns: one text (a single user message), or messages, each
``{"role": "user" | "assistant", "content": "..."}``."""


def _check_name(value: object, what: str) -> None:
    if not isinstance(value, str) or not PROMPT_NAME.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} is not a valid name: use 1 to 64 letters, digits, '_', '.' or "
            "'-', starting with a letter or digit"
        )


def _check_description(value: object, what: str) -> None:
    if not isinstance(value, str) or len(value) > DESCRIPTION_MAX:
        raise ValueError(f"{what} must be a string of at most {DESCRIPTION_MAX} characters")


@dataclass(frozen=True)
class PromptArgument:
    """One argument a prompt takes (MCP sends every argument as a string).

    Attributes:
        name: the argument's name (a keyword argument of ``render``).
        description: what to give, for the person filling it in.
        required: the prompt cannot be rendered without it.
    """

    name: str
    description: str = ""
    required: bool = False

    def __post_init__(self) -> None:
        _check_name(self.name, "prompt argument name")
        _check_description(self.description, f"the description of argument {self.name!r}")


@dataclass(frozen=True)
class Prompt:
    """A prompt template a person picks in an MCP client; the oracle renders it.

    Attributes:
        name: unique among every plugin's prompts (a clash leaves the later one out,
            reported naming both plugins).
        render: called with the arguments as keyword arguments (strings; those not given
            are left out), sync (run on a worker thread) or async; returns
            :data:`PromptMessages`. What it raises is answered as an error naming the prompt.
        description: what the prompt is for (shown in the client's list).
        arguments: what it takes, in the order a client asks for them.
        title: a human-readable name for the client to show (default: ``name``).
    """

    name: str
    render: Callable[..., Any]
    description: str = ""
    arguments: Sequence[PromptArgument] = field(default_factory=tuple)
    title: str = ""

    def __post_init__(self) -> None:
        _check_name(self.name, "prompt name")
        if not callable(self.render):
            raise ValueError(
                f"prompt {self.name!r}: render must be a function (sync or async) that returns "
                "a string or a list of messages"
            )
        _check_description(self.description, f"the description of prompt {self.name!r}")
        arguments = tuple(self.arguments)
        if not all(isinstance(a, PromptArgument) for a in arguments):
            raise ValueError(f"prompt {self.name!r}: arguments must be PromptArgument values")
        names = [a.name for a in arguments]
        if len(set(names)) != len(names):
            raise ValueError(f"prompt {self.name!r}: two arguments have the same name")
        object.__setattr__(self, "arguments", arguments)


@dataclass(frozen=True)
class Resource:
    """A document an MCP client may read by its URI.

    Attributes:
        uri: unique among every plugin's resources (``notes://index``); a clash leaves the
            later one out, reported naming both plugins.
        name: a short name for the client to show.
        read: called with no argument, sync (run on a worker thread) or async; returns the
            text (``str``) or the bytes (sent base64-encoded) of the document.
        description: what the document holds.
        mime_type: its media type (default ``text/plain``).
    """

    uri: str
    name: str
    read: Callable[[], Any]
    description: str = ""
    mime_type: str = "text/plain"

    def __post_init__(self) -> None:
        if not isinstance(self.uri, str) or not URI.fullmatch(self.uri):
            raise ValueError(
                f"resource uri {self.uri!r} is not a URI: write a scheme, a colon and a path "
                "without spaces, e.g. 'notes://index'"
            )
        if not isinstance(self.name, str) or not self.name.strip() or len(self.name) > 128:
            raise ValueError(f"resource {self.uri!r}: name must be 1 to 128 characters")
        if not callable(self.read):
            raise ValueError(
                f"resource {self.uri!r}: read must be a function (sync or async) that returns "
                "str or bytes"
            )
        _check_description(self.description, f"the description of resource {self.uri!r}")
        if not isinstance(self.mime_type, str) or not re.fullmatch(
            r"[\w.+-]+/[\w.+-]+(;.*)?", self.mime_type
        ):
            raise ValueError(
                f"resource {self.uri!r}: mime_type {self.mime_type!r} is not a media type "
                "(e.g. 'text/markdown')"
            )
