"""An MCP server definition, as a plugin's ``oracle_mcp_servers`` hook returns it.

A pure value: it imports nothing of the MCP SDK, so defining servers costs nothing when
none is used. Reading ``[mcp.<name>]`` tables of ``oracle.toml`` into these and running
the servers is :mod:`oracle_core.plugins.mcp`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from oracle_core.authoring.manifest import (
    NAME_MAX,
    VISIBILITIES,
    Visibility,
    name_problem,
    shown_name,
)
from oracle_core.errors import PluginConfigError

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds one ``tools/call`` may take before the call is a tool error."""

DEFAULT_START_TIMEOUT = 8.0
"""Seconds a server may take to start and answer ``initialize`` and ``tools/list``."""

DEFAULT_MAX_RESTARTS = 5
"""Restarts in a row (without a call that succeeded) before a server counts as failed."""

DEFAULT_BACKOFF = 0.5
"""Seconds before the first restart after a crash; each further one waits twice as long."""


@dataclass(frozen=True)
class MCPServer:
    """One MCP server the oracle imports as an on-demand plugin called ``name``.

    Give either ``command`` (a stdio server, started as a subprocess) or ``url`` (a
    streamable HTTP server). Every other field is optional: the manifest comes from these
    fields where given, else from the server's ``instructions`` and tool descriptions.

    Attributes:
        name: the plugin name (lowercase, ``[a-z][a-z0-9_-]*``), unique among plugins.
        command: the executable of a stdio server.
        args: its arguments.
        env: extra environment variables for it (values already resolved).
        cwd: its working folder.
        url: the endpoint of a streamable HTTP server (``http://`` or ``https://``).
        headers: HTTP headers sent with every request (values already resolved).
        title: the manifest title.
        summary: the manifest summary (default: the server's instructions, first line).
        when_to_use: the manifest's ``when_to_use`` (default: from the summary).
        when_not_to_use: the manifest's ``when_not_to_use``.
        tags: the manifest tags.
        category: the manifest category.
        visibility: the plugin's tier (default ``on-demand``).
        prefix: put before each tool's name (default ``"<name>_"``, with ``-`` as ``_``),
            so two servers' ``search`` tools never clash; ``""`` keeps the server's names.
        timeout: seconds one tool call may take.
        start_timeout: seconds the server may take to start and list its tools.
        max_restarts: restarts in a row before the server counts as failed.
        backoff: seconds before the first restart after a crash (doubling after that).
        origin: who defined it (``oracle.toml``, or the plugin whose hook shipped it).
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    title: str | None = None
    summary: str | None = None
    when_to_use: tuple[str, ...] = ()
    when_not_to_use: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    category: str | None = None
    visibility: Visibility = "on-demand"
    prefix: str | None = None
    timeout: float = DEFAULT_CALL_TIMEOUT
    start_timeout: float = DEFAULT_START_TIMEOUT
    max_restarts: int = DEFAULT_MAX_RESTARTS
    backoff: float = DEFAULT_BACKOFF
    origin: str = "code"

    def __post_init__(self) -> None:
        for key in ("args", "when_to_use", "when_not_to_use", "tags"):
            object.__setattr__(self, key, tuple(getattr(self, key)))
        object.__setattr__(self, "env", dict(self.env))
        object.__setattr__(self, "headers", dict(self.headers))
        problems = self.problems()
        if problems:
            first = problems[0][0]
            raise PluginConfigError(
                "; ".join(m for _, m in problems), plugin=self.name, key=first,
                problems=[m for _, m in problems],
            )  # fmt: skip

    @property
    def transport(self) -> str:
        """``"stdio"`` or ``"http"``."""
        return "stdio" if self.command else "http"

    @property
    def tool_prefix(self) -> str:
        """What goes before each of its tools' names."""
        if self.prefix is not None:
            return self.prefix
        return f"{self.name.replace('-', '_')}_"

    def where(self) -> str:
        """The server as an operator finds it: its table, or the plugin that shipped it."""
        if not isinstance(self.name, str):
            return f"MCP server {self.name!r}"
        if self.origin == "oracle.toml":
            return f"[mcp.{self.name[:NAME_MAX]}{'...' if len(self.name) > NAME_MAX else ''}]"
        return f"MCP server {shown_name(self.name)}"

    def problems(self) -> list[tuple[str | None, str]]:
        """Every problem of the definition, each as (key, sentence naming the fix)."""
        at = self.where()
        found: list[tuple[str | None, str]] = []
        problem = name_problem(self.name) if isinstance(self.name, str) else "it is not text"
        if problem is not None:
            found.append(("name", f"{at}: {problem} (the name becomes the plugin's name)"))
        if bool(self.command) == bool(self.url):
            found.append(
                (None, f"{at}: give exactly one of 'command' (a stdio server) or 'url' "
                       "(a streamable HTTP server)")
            )  # fmt: skip
        if self.url and not self.url.startswith(("http://", "https://")):
            found.append(("url", f"{at}: 'url' must start with http:// or https://"))
        if self.visibility not in VISIBILITIES:
            found.append(
                ("visibility", f"{at}: 'visibility' must be one of {', '.join(VISIBILITIES)}")
            )
        for key in ("timeout", "start_timeout", "backoff"):
            value = getattr(self, key)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                found.append((key, f"{at}: {key!r} must be a number of seconds above 0"))
        if not isinstance(self.max_restarts, int) or self.max_restarts < 0:
            found.append(("max_restarts", f"{at}: 'max_restarts' must be a whole number >= 0"))
        return found
