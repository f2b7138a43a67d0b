"""MCP server definitions: ``[mcp.<name>]`` tables of ``oracle.toml``, or a plugin's hook.

A definition is plain data and imports nothing of the MCP SDK, so reading the
configuration costs nothing when no server is used. Secrets are never written in the
file: a value ``{ "$env" = "VAR" }`` (an ``env`` entry or an HTTP header) is read from the
environment when the oracle is built, and a missing variable is an error naming the server
and the key, never the value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oracle_core.authoring.manifest import NAME_PATTERN, VISIBILITIES, Visibility
from oracle_core.errors import PluginConfigError
from oracle_core.plugins.config import env_reference, literal

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds one ``tools/call`` may take before the call is a tool error."""

DEFAULT_START_TIMEOUT = 8.0
"""Seconds a server may take to start and answer ``initialize`` and ``tools/list``."""

DEFAULT_MAX_RESTARTS = 5
"""Restarts in a row (without a call that succeeded) before a server counts as failed."""

DEFAULT_BACKOFF = 0.5
"""Seconds before the first restart after a crash; each further one waits twice as long."""

_KEYS = frozenset(
    {
        "command", "args", "env", "cwd", "url", "headers", "title", "summary", "when_to_use",
        "when_not_to_use", "tags", "category", "visibility", "prefix", "timeout",
        "start_timeout", "max_restarts", "backoff", "enabled",
    }
)  # fmt: skip


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
        return f"[mcp.{self.name}]" if self.origin == "oracle.toml" else f"MCP server {self.name!r}"

    def problems(self) -> list[tuple[str | None, str]]:
        """Every problem of the definition, each as (key, sentence naming the fix)."""
        at = self.where()
        found: list[tuple[str | None, str]] = []
        if not isinstance(self.name, str) or not NAME_PATTERN.fullmatch(self.name):
            found.append(
                ("name", f"{at}: the name must be lowercase letters, digits, '-' or '_', "
                         "starting with a letter (it becomes the plugin's name)")
            )  # fmt: skip
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


def servers_from_config(
    config: Mapping[str, Any], env: Mapping[str, str]
) -> tuple[list[MCPServer], list[PluginConfigError]]:
    """The servers of the ``[mcp]`` table of ``oracle.toml``, and the errors of bad ones.

    Args:
        config: the whole parsed ``oracle.toml``.
        env: the environment ``$env`` values are read from.

    Returns:
        The valid servers in file order (``enabled = false`` ones left out), and one
        :class:`~oracle_core.PluginConfigError` per bad table, naming the server and key.
    """
    section = config.get("mcp", {})
    if not isinstance(section, Mapping):
        error = PluginConfigError(
            "oracle.toml: 'mcp' must be a table of servers, [mcp.<name>]", plugin="mcp"
        )
        return [], [error]
    servers: list[MCPServer] = []
    errors: list[PluginConfigError] = []
    for name, table in section.items():
        try:
            server = server_from_table(str(name), table, env)
        except PluginConfigError as error:
            errors.append(error)
            continue
        if server is not None:
            servers.append(server)
    return servers, errors


def server_from_table(name: str, table: Any, env: Mapping[str, str]) -> MCPServer | None:
    """One ``[mcp.<name>]`` table as an :class:`MCPServer` (``None`` when disabled).

    Raises:
        PluginConfigError: naming the server and the first key at fault.
    """
    at = f"[mcp.{name}]"
    if not isinstance(table, Mapping):
        raise PluginConfigError(f"{at} must be a table", plugin=name)
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise PluginConfigError(
            f"{at}: unknown key {unknown[0]!r}; the keys are: {', '.join(sorted(_KEYS))}",
            plugin=name,
            key=unknown[0],
        )
    if table.get("enabled", True) is False:
        return None
    values: dict[str, Any] = {"name": name, "origin": "oracle.toml"}
    for key in ("command", "cwd", "url", "title", "summary", "category", "prefix", "visibility"):
        if key in table:
            values[key] = _text(table[key], at, key, name)
    for key in ("args", "when_to_use", "when_not_to_use", "tags"):
        if key in table:
            values[key] = _texts(table[key], at, key, name)
    for key in ("env", "headers"):
        if key in table:
            values[key] = _secrets(table[key], at, key, name, env)
    for key in ("timeout", "start_timeout", "backoff"):
        if key in table:
            values[key] = _number(table[key], at, key, name)
    if "max_restarts" in table:
        value = table["max_restarts"]
        if not isinstance(value, int) or isinstance(value, bool):
            raise PluginConfigError(
                f"{at}: 'max_restarts' must be a whole number", plugin=name, key="max_restarts"
            )
        values["max_restarts"] = value
    return MCPServer(**values)


def _text(value: Any, at: str, key: str, name: str) -> str:
    if not isinstance(value, str):
        raise PluginConfigError(f"{at}: {key!r} must be a string", plugin=name, key=key)
    return value


def _texts(value: Any, at: str, key: str, name: str) -> tuple[str, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise PluginConfigError(f"{at}: {key!r} must be a list of strings", plugin=name, key=key)
    return tuple(_text(item, at, key, name) for item in value)


def _number(value: Any, at: str, key: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PluginConfigError(f"{at}: {key!r} must be a number of seconds", plugin=name, key=key)
    return float(value)


def _secrets(value: Any, at: str, key: str, name: str, env: Mapping[str, str]) -> dict[str, str]:
    """A table of strings whose values may be ``"$VAR"`` or ``{ "$env" = "VAR" }`` (read
    from ``env``; ``"$$..."`` is a literal ``$``)."""
    if not isinstance(value, Mapping):
        raise PluginConfigError(f"{at}: {key!r} must be a table", plugin=name, key=key)
    resolved: dict[str, str] = {}
    for item, raw in value.items():
        where = f"{key}.{item}"
        variable = env_reference(raw)
        if variable is None:
            if not isinstance(raw, str):
                raise PluginConfigError(
                    f'{at}: {where!r} must be a string, "$VAR" or {{ "$env" = "VAR" }}',
                    plugin=name,
                    key=where,
                )
            resolved[str(item)] = literal(raw)
            continue
        found = env.get(variable)
        if found is None:
            raise PluginConfigError(
                f"{at}: {where!r} reads the environment variable {variable!r}, which is not "
                "set: set it, or remove the key",
                plugin=name,
                key=where,
            )
        resolved[str(item)] = found
    return resolved
