"""MCP server definitions read from ``[mcp.<name>]`` tables of ``oracle.toml``.

A definition (:class:`~oracle_core.authoring.mcp.MCPServer`, also what a plugin's
``oracle_mcp_servers`` hook returns) is plain data and imports nothing of the MCP SDK, so
reading the configuration costs nothing when no server is used. Secrets are never written in the
file: a value ``{ "$env" = "VAR" }`` (an ``env`` entry or an HTTP header) is read from the
environment when the oracle is built, and a missing variable is an error naming the server
and the key, never the value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oracle_core.authoring.manifest import NAME_MAX
from oracle_core.authoring.mcp import MCPServer
from oracle_core.errors import PluginConfigError
from oracle_core.settings.plugin_tables import env_reference, literal

__all__ = ["MCPServer", "server_from_table", "servers_from_config"]

_KEYS = frozenset(
    {
        "command", "args", "env", "cwd", "url", "headers", "title", "summary", "when_to_use",
        "when_not_to_use", "tags", "category", "visibility", "prefix", "timeout",
        "start_timeout", "max_restarts", "backoff", "enabled",
    }
)  # fmt: skip


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
    if len(name) > NAME_MAX:
        # Checked first: every other message names the table, and a name this long is cut.
        short = f"{name[:NAME_MAX]}..."
        raise PluginConfigError(
            f"[mcp.{short}]: the name is {len(name)} characters: keep it within {NAME_MAX} "
            "(it becomes the plugin's name)",
            plugin=short,
            key="name",
        )
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
