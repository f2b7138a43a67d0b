"""Model-call settings an operator sets: ``[models."<model>"]`` tables of ``oracle.toml``, the
``[models."*"]`` table for every model, and three environment variables.

.. code-block:: toml

    [models."*"]                      # every model
    timeout = 300

    [models."openai/llama-3.2-1b"]    # one model string (or an alias of ``[aliases]``)
    max_tokens = 1024
    retries = 0
    retry_on = ["timeout", "429"]

Where one setting of one model comes from, the first that sets it wins:

1. the run's own model options (``--timeout``, ``RunOptions(model_options=...)``), applied
   by the model to each call of that run (not read here);
2. the model's own table, ``[models."<model string>"]`` or ``[models.<alias>]`` (an alias
   stands for its model string, so both cannot have a table);
3. the environment: ``ORACLE_MODEL_TIMEOUT``, ``ORACLE_MODEL_RETRIES``, ``ORACLE_MAX_TOKENS``;
4. ``[models."*"]``;
5. the built-in default (the model's: 120 s, 2 retries of every failure that may pass, and
   ``max_tokens`` 4096).

Every value is checked when the file is read: a bad one is a
:class:`~oracle_core.errors.ConfigError` naming the file, the line, the table, the key, the
value and what would fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from oracle_core.errors import ConfigError
from oracle_core.settings.environment import read_variable
from oracle_core.settings.reading import config_text, line_of
from oracle_core.settings.table import SETTINGS
from oracle_core.settings.unknown import closest

EVERY_MODEL = "*"
"""The name of the table that holds the defaults of every model: ``[models."*"]``."""

RETRY_ON = frozenset({"timeout", "connection", "408", "409", "429", "5xx"})
"""The failures a model call may be retried after (``retry_on``), by name; every one by
default. The models read this list too (:mod:`oracle_core.models.retries`).

- ``timeout``: an attempt took longer than its ``timeout``;
- ``connection``: the server could not be reached, or the connection broke before an answer;
- ``408``, ``409``, ``429``: those HTTP statuses (request timeout, conflict, rate limit);
- ``5xx``: any HTTP status from 500 up.

Any other failure (a 400, a refused key, an unknown model) fails the same way again and is
never retried.
"""

KEYS: tuple[str, ...] = ("timeout", "retries", "retry_on", "max_tokens", "temperature")
"""The keys of a ``[models."<model>"]`` table."""

_EVERY_MODEL_KEY = 'models."*".'
"""The ``oracle.toml`` keys of the settings table that an environment variable sets too."""

_FROM_ENV = tuple(s for s in SETTINGS if (s.toml or "").startswith(_EVERY_MODEL_KEY))

VARIABLES: Mapping[str, str] = MappingProxyType(
    {(s.toml or "").removeprefix(_EVERY_MODEL_KEY): s.variable or "" for s in _FROM_ENV}
)
"""The environment variable of each key that has one (the default of every model), from the
settings table (:mod:`oracle_core.settings.table`)."""

BUILT_IN = "built-in default"
"""The source of a setting nothing set."""

DEFAULTS: Mapping[str, Any] = {
    "timeout": 120.0,
    "retries": 2,
    "retry_on": tuple(sorted(RETRY_ON)),
    "max_tokens": 4096,
    "temperature": None,
}
"""What a model uses for a key nothing sets (``None``: nothing is sent, the provider's own
applies). The model classes take their defaults from here."""


@dataclass(frozen=True)
class ModelCallSettings:
    """The model-call settings of one model, merged from everywhere they may be set.

    ``None`` is "not set": the model's own default applies (see the module docs).

    Attributes:
        timeout: seconds one attempt of a model call may take.
        retries: attempts after the first, for failures that may pass.
        retry_on: which failures are retried (names of :data:`RETRY_ON`).
        max_tokens: the most tokens one reply may have (sent as ``max_tokens``).
        temperature: the sampling temperature sent with every call.
        sources: where each set key came from (``[models."*"] timeout``,
            ``ORACLE_MAX_TOKENS``, ...).
    """

    timeout: float | None = None
    retries: int | None = None
    retry_on: tuple[str, ...] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    sources: Mapping[str, str] = field(default_factory=dict)

    def model_arguments(self) -> dict[str, Any]:
        """The keyword arguments for :func:`~oracle_core.models.openai.model_for`: ``timeout``,
        ``num_retries`` and ``retry_on``, then the request options (``max_tokens``,
        ``temperature``); a setting that is not set is left out."""
        arguments: dict[str, Any] = {
            "timeout": self.timeout,
            "num_retries": self.retries,
            "retry_on": self.retry_on,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        return {name: value for name, value in arguments.items() if value is not None}


def env_defaults(env: Mapping[str, str]) -> dict[str, Any]:
    """The keys the environment sets for every model (unset or empty variables are left out).

    Raises:
        ConfigError: a variable that is not a number of the right kind and range.
    """
    values: dict[str, Any] = {}
    for setting in _FROM_ENV:
        value = read_variable(env, setting)
        if value is not None:
            values[(setting.toml or "").removeprefix(_EVERY_MODEL_KEY)] = value
    return values


def read_model_tables(
    section: Mapping[str, Any], path: Path, resolve: Callable[[str], str]
) -> dict[str, dict[str, Any]]:
    """Check every ``[models.<name>]`` table and key them by the model string they configure.

    Args:
        section: the ``[models]`` table of ``oracle.toml`` as read (each entry a table).
        path: the file, for the messages.
        resolve: the model string of a name (an alias's, or the name itself).

    Returns:
        The checked values of each table, keyed by model string (``"*"`` for every model).

    Raises:
        ConfigError: an unknown key, a value of the wrong kind or out of range, or two
            tables for one model (a model string and an alias of it).
    """
    tables: dict[str, dict[str, Any]] = {}
    named: dict[str, str] = {}
    for name, table in section.items():
        if not name.strip():
            raise _error(path, name, None, name, 'a model string, an alias or "*"')
        model = name if name == EVERY_MODEL else resolve(name)
        if model in named:
            text = config_text(path)  # read again only to say where: the file is wrong
            raise ConfigError(
                f"{_where(path, text, name, None)}: [models.{_quoted(name)}] and "
                f"[models.{_quoted(named[model])}] both configure the model {model}: "
                "merge them into one table",
                source=str(path),
                key=f"models.{name}",
                line=line_of(text, f"models.{name}"),
                expected="one table per model",
            )
        named[model] = name
        tables[model] = {key: _checked(path, name, key, value) for key, value in table.items()}
    return tables


def merged(
    model: str, tables: Mapping[str, Mapping[str, Any]], env: Mapping[str, Any]
) -> ModelCallSettings:
    """The settings of ``model`` (a model string): its table, the environment, then
    ``[models."*"]`` (see the module docs for the order)."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    layers: list[tuple[Mapping[str, Any], Callable[[str], str]]] = [
        (tables.get(EVERY_MODEL, {}), lambda key: f'[models."*"] {key}'),
        (env, lambda key: VARIABLES[key]),
    ]
    if model != EVERY_MODEL:
        own = tables.get(model, {})
        layers.append((own, lambda key: f"[models.{_quoted(model)}] {key}"))
    for layer, source in layers:  # the later wins
        for key, value in layer.items():
            values[key] = value
            sources[key] = source(key)
    return ModelCallSettings(**values, sources=sources)


def _checked(path: Path, table: str, key: str, value: Any) -> Any:
    """``value`` of ``key`` in ``[models.<table>]`` when it fits, else the error saying why."""
    if key not in KEYS:
        near = closest(key, KEYS)
        hint = f"did you mean {near}? " if near else ""
        raise _error(
            path, table, key, value,
            f"one of the keys {', '.join(KEYS)} ({hint}remove or rename {key})",
            unknown=True,
        )  # fmt: skip
    if key == "timeout":
        if not _number(value) or not value > 0:
            raise _error(path, table, key, value, "a number of seconds above 0, e.g. 300")
        return float(value)
    if key == "temperature":
        if not _number(value) or value < 0:
            raise _error(path, table, key, value, "a number of at least 0, e.g. 0.2")
        return float(value)
    if key == "retries":
        if type(value) is not int or value < 0:
            raise _error(path, table, key, value, "a whole number of at least 0, e.g. 2")
        return value
    if key == "max_tokens":
        if type(value) is not int or value < 1:
            raise _error(path, table, key, value, "a whole number of at least 1, e.g. 1024")
        return value
    return _retry_on(path, table, value)


def _retry_on(path: Path, table: str, value: Any) -> tuple[str, ...]:
    names = ", ".join(f'"{n}"' for n in sorted(RETRY_ON))
    expected = f'a list of names among {names} (e.g. ["timeout", "429"]; [] retries nothing)'
    if not isinstance(value, list):
        raise _error(path, table, "retry_on", value, expected)
    for item in value:
        if not isinstance(item, str) or item not in RETRY_ON:
            if type(item) is int and str(item) in RETRY_ON:  # 429 is not the name "429"
                expected = f'"{item}" (a status is named as a string); {expected}'
            raise _error(path, table, "retry_on", item, expected, item=True)
    return tuple(dict.fromkeys(value))  # in order, each once


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _error(
    path: Path,
    table: str,
    key: str | None,
    value: Any,
    expected: str,
    *,
    unknown: bool = False,
    item: bool = False,
) -> ConfigError:
    dotted = f"models.{table}" + (f".{key}" if key else "")
    text = config_text(path)  # read again only to say where: the file is wrong
    where = _where(path, text, table, key)
    shown = f"[models.{_quoted(table)}]"
    if unknown:
        what = f"{shown} has an unknown key {key}"
    elif item:
        what = f"{shown} retry_on holds {_shown(value)}, which names no failure"
    elif key is None:
        what = f"{shown} is not a model"
    else:
        what = f"{shown} {key} = {_shown(value)} is not valid"
    return ConfigError(
        f"{where}: {what}: expected {expected}",
        source=str(path),
        key=dotted,
        line=line_of(text, dotted),
        expected=expected,
    )


def _where(path: Path, text: str, table: str, key: str | None) -> str:
    line = (line_of(text, f"models.{table}.{key}") if key else None) or line_of(
        text, f"models.{table}"
    )
    return f"{path}, line {line}" if line else str(path)


def _quoted(name: str) -> str:
    """``name`` as a TOML key: bare when it may be, else quoted (``"openai/gpt-4o"``)."""
    bare = name and all(c.isalnum() or c in "_-" for c in name)
    return name if bare else '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _shown(value: Any) -> str:
    """``value`` as TOML would write it, cut short."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = '"' + value + '"'
    elif isinstance(value, list):
        text = "[" + ", ".join(_shown(v) for v in value) + "]"
    elif isinstance(value, dict):
        text = "a table"
    else:
        text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."
