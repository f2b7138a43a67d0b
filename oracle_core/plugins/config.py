"""A plugin's typed configuration: its values checked against the config model it declares.

The values themselves (the ``[plugins.<name>]`` table of ``oracle.toml``, its ``$env``
references and the ``ORACLE_PLUGIN_<NAME>__<KEY>`` overrides) are operator settings, read
by :mod:`oracle_core.settings.plugin_tables`; their names are re-exported here. An
environment value is a string; a number or flag is converted by the plugin's config model,
and a JSON array or object is read as such where the model expects a list, a dict or a
model.

A plugin that declares a config model (``PluginManifest(config=MyConfig)``, a pydantic
``BaseModel``) gets its values validated at assembly: every unknown key and every value of
the wrong type is reported at once, naming the plugin and the key, and the plugin is left
out like any other broken plugin. Its hooks and its tools' :class:`~oracle_core.ToolContext`
then get the model instance as ``config``; a plugin without one gets the plain dict.
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, SecretBytes, SecretStr, ValidationError

from oracle_core.settings.plugin_tables import (
    ConfigValues,
    env_prefix,
    env_reference,
    literal,
    plain_plugin_config,
    plugin_config_error,
    plugin_overrides,
    resolve_config,
)

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


def config_problems(
    plugin: str, model: type[BaseModel], config: ConfigValues
) -> tuple[BaseModel | None, list[tuple[str, str]]]:
    """Validate ``config`` against ``plugin``'s config model.

    Returns:
        The model instance (``None`` when there are problems) and every problem as
        ``(key, sentence)``: unknown keys (with the closest real one), values of the wrong
        type, required keys that are missing. A secret value is never quoted.
    """
    known = _keys(model)
    closed = model.model_config.get("extra") != "allow"
    # A key the plugin does not read is named as such, even when its $VAR is unset too:
    # setting the variable would not help (an example copied from the docs, say).
    problems = [(k, p) for k, p in config.problems if k in known or not closed]
    unresolved = {key for key, _ in config.problems}
    values = dict(config.values)
    if closed:
        for key in [*values, *sorted(unresolved - known)]:
            if key in known:
                continue
            values.pop(key, None)
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
    if model is None:
        return plain_plugin_config(plugin, section, env, overrides)
    config = resolve_config(plugin, section, env, overrides)
    instance, problems = config_problems(plugin, model, config)
    if problems:
        raise plugin_config_error(plugin, problems)
    return instance
