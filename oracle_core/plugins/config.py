"""A plugin's configuration: its ``[plugins.<name>]`` table, secrets, overrides, and types.

Where a value comes from, last one wins:

1. ``[plugins.<name>]`` in ``$ORACLE_HOME/oracle.toml``;
2. ``ORACLE_PLUGIN_<NAME>__<KEY>`` in the environment (upper case, ``-`` written ``_``,
   and a double underscore between plugin and key so ``web`` and ``web-search`` never
   share a variable). Such a value is a string; a number or flag is converted by the
   plugin's config model, and a JSON array or object is read as such where the model
   expects a list, a dict or a model.

A value in the file written ``"$VAR"`` (the whole string) or ``{ "$env" = "VAR" }`` is read
from the environment variable ``VAR``, so secrets stay out of the file (``"$$"`` at the
start of a string writes a literal ``$``). A variable that is not set is an error naming
the plugin, the key and the variable; the value itself is never shown in any message.

A plugin that declares a config model (``PluginManifest(config=MyConfig)``, a pydantic
``BaseModel``) gets its values validated at assembly: every unknown key and every value of
the wrong type is reported at once, naming the plugin and the key, and the plugin is left
out like any other broken plugin. Its hooks and its tools' :class:`~oracle_core.ToolContext`
then get the model instance as ``config``; a plugin without one gets the plain dict.
"""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, SecretBytes, SecretStr, ValidationError

from oracle_core.errors import PluginConfigError

__all__ = [
    "ConfigValues",
    "config_problems",
    "env_prefix",
    "env_reference",
    "literal",
    "load_plugin_config",
    "plugin_overrides",
    "resolve_config",
]

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


def config_problems(
    plugin: str, model: type[BaseModel], config: ConfigValues
) -> tuple[BaseModel | None, list[tuple[str, str]]]:
    """Validate ``config`` against ``plugin``'s config model.

    Returns:
        The model instance (``None`` when there are problems) and every problem as
        ``(key, sentence)``: unknown keys (with the closest real one), values of the wrong
        type, required keys that are missing. A secret value is never quoted.
    """
    problems: list[tuple[str, str]] = list(config.problems)
    unresolved = {key for key, _ in config.problems}
    known = _keys(model)
    values = dict(config.values)
    if model.model_config.get("extra") != "allow":
        for key in list(values):
            if key in known:
                continue
            del values[key]
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            settings = ", ".join(sorted(known)) or "none"
            problems.append(
                (
                    key,
                    f"{config.sources[key]} is not a setting of plugin {plugin!r}{hint}; "
                    f"its settings are: {settings}. Remove it or fix its name",
                )
            )
    for key, value in values.items():
        if config.sources.get(key, "").startswith("ORACLE_PLUGIN_") and isinstance(value, str):
            values[key] = _from_env(model, key, value)
    try:
        instance = model.model_validate(values)
    except ValidationError as error:
        for item in error.errors():
            key, message = _describe(plugin, item, config, _secret_fields(model))
            if key not in unresolved:  # already said: its variable is not set
                problems.append((key, message))
        return None, problems
    return (None, problems) if problems else (instance, [])


def _keys(model: type[BaseModel]) -> set[str]:
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        keys.add(name)
        if isinstance(info.alias, str):
            keys.add(info.alias)
    return keys


def _from_env(model: type[BaseModel], key: str, value: str) -> Any:
    """An environment value read as JSON where the model expects a list, dict or model."""
    info = model.model_fields.get(key)
    if info is None or not value.lstrip().startswith(("[", "{")):
        return value
    if not _structured(info.annotation):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value  # the model reports the type it expected


def _structured(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_structured(arg) for arg in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _structured(typing.get_args(annotation)[0])
    if origin in (list, dict, tuple, set, frozenset):
        return True
    return isinstance(annotation, type) and issubclass(annotation, BaseModel | list | dict)


def _secret_fields(model: type[BaseModel]) -> set[str]:
    """Fields declared ``SecretStr`` or ``SecretBytes`` (optional or not): never quoted."""

    def secret(annotation: Any) -> bool:
        if typing.get_origin(annotation) in (typing.Union, types.UnionType, typing.Annotated):
            return any(secret(arg) for arg in typing.get_args(annotation))
        return isinstance(annotation, type) and issubclass(annotation, SecretStr | SecretBytes)

    return {name for name, info in model.model_fields.items() if secret(info.annotation)}


def _describe(
    plugin: str, item: Any, config: ConfigValues, secret_fields: set[str]
) -> tuple[str, str]:
    location = [str(part) for part in item["loc"]]
    key = location[0] if location else ""
    where = config.sources.get(key, f"[plugins.{plugin}] {key}")
    inner = "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in location[1:])
    message = str(item["msg"]).removeprefix("Value error, ")
    if item["type"] == "missing" and not inner:
        return key, (
            f"[plugins.{plugin}] {key} is required: set it in oracle.toml or as "
            f"{env_prefix(plugin)}{key.upper()}"
        )
    if key in config.secret:
        shown = " (set from the environment; the value is not shown)"
    elif key in secret_fields:
        shown = " (a secret: the value is not shown)"
    elif "input" in item and not isinstance(item["input"], dict | list):
        shown = f" = {item['input']!r}"
    else:
        shown = ""
    return key, f"{where}{inner}{shown}: {message}"


def load_plugin_config(
    plugin: str,
    model: type[BaseModel] | None,
    section: Mapping[str, Any],
    env: Mapping[str, str],
    overrides: Mapping[str, str] | None = None,
) -> Any:
    """``plugin``'s configuration as its hooks and tools get it.

    Args:
        plugin: the plugin's name.
        model: the config model its manifest declares, or ``None``.
        section: its ``[plugins.<name>]`` table.
        env: the environment.
        overrides: :func:`plugin_overrides` of ``env``, when already picked out.

    Returns:
        An instance of ``model``, or the plain dict of values when there is no model.

    Raises:
        PluginConfigError: listing every problem, naming the plugin and each key.
    """
    config = resolve_config(plugin, section, env, overrides)
    if model is None:
        if config.problems:
            raise _error(plugin, list(config.problems))
        return config.values
    instance, problems = config_problems(plugin, model, config)
    if problems:
        raise _error(plugin, problems)
    return instance


def _error(plugin: str, problems: list[tuple[str, str]]) -> PluginConfigError:
    messages = [message for _, message in problems]
    text = (
        messages[0]
        if len(messages) == 1
        else f"has {len(messages)} configuration problems:"
        + "".join(f"\n    - {m}" for m in messages)
    )
    return PluginConfigError(text, plugin=plugin, key=problems[0][0] or None, problems=messages)
