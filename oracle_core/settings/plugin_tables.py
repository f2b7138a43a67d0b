"""The operator's ``[plugins.<name>]`` tables and ``ORACLE_PLUGIN_*`` overrides, as plain values.

Where a value comes from, last one wins:

1. ``[plugins.<name>]`` in ``$ORACLE_HOME/oracle.toml``;
2. ``ORACLE_PLUGIN_<NAME>__<KEY>`` in the environment (upper case, ``-`` written ``_``,
   and a double underscore between plugin and key so ``web`` and ``web-search`` never
   share a variable). Such a value is a string.

A value in the file written ``"$VAR"`` (the whole string) or ``{ "$env" = "VAR" }`` is read
from the environment variable ``VAR``, so secrets stay out of the file (``"$$"`` at the
start of a string writes a literal ``$``). A variable that is not set is an error naming
the plugin, the key and the variable; the value itself is never shown in any message.

This is operator settings: plain dicts, no plugin code. Validating the values against a
plugin's config model is :mod:`oracle_core.plugins.config`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oracle_core.errors import PluginConfigError

_REFERENCE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def env_prefix(plugin: str) -> str:
    """The prefix of the environment variables that override ``plugin``'s keys."""
    return f"ORACLE_PLUGIN_{plugin.upper().replace('-', '_')}__"


def plugin_overrides(env: Mapping[str, str]) -> dict[str, str]:
    """The ``ORACLE_PLUGIN_...`` variables of ``env``, in its order: picked out once, so
    that resolving thousands of plugins does not scan the whole environment for each."""
    return {name: value for name, value in env.items() if name.startswith("ORACLE_PLUGIN_")}


@dataclass(frozen=True)
class ConfigValues:
    """One plugin's configuration values, resolved, and where each key was set.

    Attributes:
        values: the values by key (``$env`` references replaced by their variables).
        sources: for each key, where it was set: ``[plugins.<name>] <key>`` or the
            environment variable's name.
        secret: keys whose value (or part of it) came from a ``$env`` reference: their
            values are never shown in a message.
        problems: what could not be resolved, as ``(key, sentence)`` (a referenced
            variable that is not set; the key is then left out of ``values``).
    """

    values: dict[str, Any]
    sources: dict[str, str]
    secret: frozenset[str]
    problems: tuple[tuple[str, str], ...] = ()


def resolve_config(
    plugin: str,
    section: Mapping[str, Any],
    env: Mapping[str, str],
    overrides: Mapping[str, str] | None = None,
) -> ConfigValues:
    """Resolve ``plugin``'s table of ``oracle.toml`` and its environment overrides.

    Args:
        plugin: the plugin's name.
        section: its ``[plugins.<name>]`` table as read from the file.
        env: the environment (``$env`` references and ``ORACLE_PLUGIN_...`` overrides).
        overrides: :func:`plugin_overrides` of ``env``, when already picked out.

    Returns:
        The values; a reference to an unset variable leaves the key out and is listed in
        ``problems``.
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    secret: set[str] = set()
    problems: list[tuple[str, str]] = []
    for key, raw in section.items():
        where = f"[plugins.{plugin}] {key}"
        missing: list[str] = []
        value, used = _resolve(raw, env, missing)
        sources[key] = where
        if used:
            secret.add(key)
        if missing:
            problems += [
                (
                    key,
                    f"{where} refers to the environment variable {name}, which is not set: "
                    f"set {name}, or change {key} in oracle.toml",
                )
                for name in missing
            ]
            continue
        values[key] = value
    prefix = env_prefix(plugin)
    for name, value in (plugin_overrides(env) if overrides is None else overrides).items():
        if name.startswith(prefix) and len(name) > len(prefix):
            key = name.removeprefix(prefix).lower()
            values[key] = value
            sources[key] = name
            secret.discard(key)
    return ConfigValues(values, sources, frozenset(secret), tuple(problems))


def env_reference(raw: Any) -> str | None:
    """The environment variable ``raw`` refers to, if it is ``"$VAR"`` (the whole string) or
    ``{ "$env" = "VAR" }``; ``None`` for any other value (``"$$..."`` is a literal, see
    :func:`literal`). The one reading of ``$env`` for plugin and MCP configuration."""
    if isinstance(raw, str):
        match = _REFERENCE.fullmatch(raw)
        return match.group(1) if match else None
    if isinstance(raw, Mapping) and set(raw) == {"$env"}:
        return str(raw["$env"])
    return None


def literal(raw: str) -> str:
    """A string that is no reference as written: ``"$$..."`` stands for ``"$..."``."""
    return raw[1:] if raw.startswith("$$") else raw


def _resolve(raw: Any, env: Mapping[str, str], missing: list[str]) -> tuple[Any, bool]:
    """``raw`` with its ``$env`` references replaced; also whether it had any."""
    variable = env_reference(raw)
    if variable is not None:
        return _variable(variable, env, missing)
    if isinstance(raw, str):
        return literal(raw), False
    if isinstance(raw, dict):
        resolved: dict[str, Any] = {}
        used = False
        for key, item in raw.items():
            resolved[key], got = _resolve(item, env, missing)
            used = used or got
        return resolved, used
    if isinstance(raw, list):
        items = [_resolve(item, env, missing) for item in raw]
        return [value for value, _ in items], any(got for _, got in items)
    return raw, False


def _variable(name: str, env: Mapping[str, str], missing: list[str]) -> tuple[Any, bool]:
    if name not in env:
        missing.append(name)
        return None, True
    return env[name], True


def plain_plugin_config(
    plugin: str,
    section: Mapping[str, Any],
    env: Mapping[str, str],
    overrides: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``plugin``'s configuration as a plain dict: its table resolved, overrides applied.

    Args:
        plugin: the plugin's name.
        section: its ``[plugins.<name>]`` table.
        env: the environment.
        overrides: :func:`plugin_overrides` of ``env``, when already picked out.

    Raises:
        PluginConfigError: a ``$env`` reference names a variable that is not set.
    """
    config = resolve_config(plugin, section, env, overrides)
    if config.problems:
        raise plugin_config_error(plugin, list(config.problems))
    return config.values


def plugin_config_error(plugin: str, problems: list[tuple[str, str]]) -> PluginConfigError:
    """The error listing every configuration problem of ``plugin`` (``(key, sentence)`` each)."""
    messages = [message for _, message in problems]
    text = (
        messages[0]
        if len(messages) == 1
        else f"has {len(messages)} configuration problems:"
        + "".join(f"\n    - {m}" for m in messages)
    )
    return PluginConfigError(text, plugin=plugin, key=problems[0][0] or None, problems=messages)
