"""Reading one setting of the table (:mod:`oracle_core.settings.table`) from the environment:
its kind says how, its range and unit what a bad value's message says.

Every failure is a :class:`~oracle_core.errors.ConfigError` naming the variable, what was
found and what would fit (:mod:`oracle_core.settings.reading`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from oracle_core.errors import ConfigError
from oracle_core.settings.home import home_from_env
from oracle_core.settings.reading import env_choice, env_flag, env_number
from oracle_core.settings.servers import database_url, server_url
from oracle_core.settings.setting import Setting
from oracle_core.settings.table import of_owner


def names(value: str | None) -> tuple[str, ...] | None:
    """A comma list as names, blanks dropped (``None`` when unset; ``""`` is no name)."""
    if value is None:
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


def read_variable(env: Mapping[str, str], setting: Setting) -> Any:
    """The value ``env`` gives ``setting`` (its :attr:`~Setting.default` when unset or empty).

    Raises:
        ConfigError: a value that does not fit the setting's kind and range, naming it.
        ValueError: the setting has no environment variable, or is a table.
    """
    variable = setting.variable
    if variable is None or setting.kind in ("table", "tables"):
        raise ValueError(f"{setting.name} is not read from the environment")
    raw = env.get(variable)
    kind = setting.kind
    if kind == "path":
        return home_from_env(env)
    if kind in ("text", "secret"):
        return raw or None
    if kind == "names":
        found = names(raw)
        return setting.default if found is None else found
    if kind == "url":
        return server_url(raw, setting.given_as)
    if kind == "database_url":
        return database_url(raw)
    if kind == "choice":
        return env_choice(env, variable, setting.choices, str(setting.default))
    if not (raw or "").strip():
        return setting.default
    if kind == "flag":
        return env_flag(env, variable)
    number = int if kind == "int" else float
    return env_number(
        env,
        variable,
        number,
        number(0),
        minimum=setting.minimum,
        positive=setting.positive,
        unit=setting.unit,
    )


def read_settings(env: Mapping[str, str], settings: Iterable[Setting]) -> dict[str, Any]:
    """Each of ``settings`` read from ``env`` (:func:`read_variable`), by name, in order: the
    first bad one raises."""
    return {setting.name: read_variable(env, setting) for setting in settings}


def environment_problems(env: Mapping[str, str]) -> list[ConfigError]:
    """Every variable of ``env`` whose value does not fit its setting, each read on its own
    (where :meth:`Settings.from_env <oracle_core.settings.Settings.from_env>` stops at the
    first): one error each, in table order, for ``oracle config --check``."""
    problems = []
    for setting in of_owner("check", "settings", "run_limits"):
        try:
            read_variable(env, setting)
        except ConfigError as error:
            problems.append(error)
    return problems
