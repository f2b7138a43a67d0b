"""Reading operator settings so that a bad one says where it is and what would fit.

Every failure is a :class:`~oracle_core.errors.ConfigError` with a one-line message: the
variable, or the file, line and key, then what was found and what is expected. The CLI
prints it and exits with status 2 (``oracle_core.cli.errors``).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from oracle_core.errors import ConfigError
from oracle_core.settings.table import TABLES as TABLES
from oracle_core.settings.table import TABLES_OF_TABLES as TABLES_OF_TABLES

N = TypeVar("N", int, float)
E = TypeVar("E", bound=ConfigError)

ENVIRONMENT = "environment"
"""The :attr:`ConfigError.source` of a bad environment variable."""

FLAG_TRUE = ("1", "true", "yes", "on")
"""The values that turn a switch on (any case)."""

FLAG_FALSE = ("", "0", "false", "no", "off")
"""The values that leave a switch off (any case; unset is off too)."""

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_TOML_END = re.compile(r"\s*\(at end of document\)$")
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z0-9_.\-\"' ]+?|\"[^\"]*\"|'[^']*')\s*=")


def bad_variable(variable: str, raw: str, expected: str) -> ConfigError:
    """The error for environment variable ``variable`` holding ``raw`` where ``expected`` fits."""
    shown = raw if len(raw) <= 60 else raw[:57] + "..."
    return ConfigError(
        f"{variable}={shown!r} in the environment is not valid: expected {expected} "
        f"(or unset {variable} for the default)",
        source=ENVIRONMENT,
        key=variable,
        expected=expected,
    )


def env_flag(env: Mapping[str, str], variable: str) -> bool:
    """``variable`` as an on/off switch (``1/true/yes/on``, ``0/false/no/off`` or unset).

    Raises:
        ConfigError: any other value.
    """
    raw = env.get(variable) or ""
    value = raw.strip().lower()
    if value in FLAG_TRUE:
        return True
    if value in FLAG_FALSE:
        return False
    raise bad_variable(variable, raw, "1 or 0 (true/false, yes/no, on/off)")


def env_number(
    env: Mapping[str, str],
    variable: str,
    kind: type[N],
    default: N,
    *,
    minimum: float | None = None,
    positive: bool = False,
    unit: str = "",
) -> N:
    """``variable`` as a number of ``kind``; ``default`` when unset or empty.

    Args:
        env: the environment.
        variable: the variable's name.
        kind: ``int`` (a whole number) or ``float``.
        default: the value when unset.
        minimum: the smallest value allowed.
        positive: the value must be above zero.
        unit: what the number counts (``"seconds"``, ``"tokens"``), for the message.

    Raises:
        ConfigError: the value is not such a number, or out of range.
    """
    raw = (env.get(variable) or "").strip()
    if not raw:
        return default
    what = "a whole number" if kind is int else "a number"
    if unit:
        what += f" of {unit}"
    if positive:
        what += ", above 0"
    elif minimum is not None:
        what += f", at least {minimum:g}"
    try:
        value = kind(raw)
    except ValueError:
        raise bad_variable(variable, raw, what) from None
    if value != value or value in (float("inf"), float("-inf")):  # nan, inf
        raise bad_variable(variable, raw, what)
    if (positive and not value > 0) or (minimum is not None and value < minimum):
        raise bad_variable(variable, raw, what)
    return value


def env_choice(
    env: Mapping[str, str], variable: str, choices: tuple[str, ...], default: str
) -> str:
    """``variable`` as one of ``choices`` (case-insensitive); ``default`` when unset.

    Raises:
        ConfigError: any other value.
    """
    raw = env.get(variable) or ""
    value = raw.strip().lower() or default
    if value not in choices:
        raise bad_variable(variable, raw, "one of " + ", ".join(choices))
    return value


def line_of(text: str, key: str) -> int | None:
    """The line (1-based) of ``text`` that defines the dotted ``key``, if one is found.

    A table header ``[key]`` or an assignment ``name = ...`` whose table and name make
    ``key``. Quotes around key parts are ignored.
    """
    table = ""
    for number, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            table = _dotted(header.group(1))
            if table == key:
                return number
            continue
        assignment = _ASSIGNMENT.match(line)
        if assignment:
            name = _dotted(assignment.group(1))
            if (f"{table}.{name}" if table else name) == key:
                return number
    return None


def _dotted(key: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in key.split("."))


def _kind(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }
    return names.get(type(value), type(value).__name__)


def read_config(path: Path) -> dict[str, Any]:
    """Parse ``oracle.toml`` at ``path`` and check the shape of the tables the core reads.

    A missing file is an empty configuration.

    Raises:
        ConfigError: the file cannot be read, is not valid TOML (naming its line), or a
            known table has the wrong kind of value (naming the key and its line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{path} is not UTF-8 text (byte {error.start}): save it as UTF-8",
            source=str(path),
            expected="UTF-8 text",
        ) from None
    except NotADirectoryError:
        raise ConfigError(
            f"ORACLE_HOME={str(path.parent)!r} cannot be used: a part of it is a file, not a "
            "folder; set ORACLE_HOME to a folder you can write (it is created if missing)",
            source=ENVIRONMENT,
            key="ORACLE_HOME",
            expected="a folder",
        ) from None
    except OSError as error:
        raise ConfigError(
            f"{path} cannot be read: {error.strerror or error}", source=str(path)
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _syntax_error(path, error) from None
    _check_shape(path, text, data)
    return data


def _syntax_error(path: Path, error: tomllib.TOMLDecodeError) -> ConfigError:
    message = str(error)
    found = _TOML_POSITION.search(message)
    line: int | None = None
    if found:
        line = int(found.group(1))
        message = message[: found.start()]
        where = f"{path}, line {line}, column {found.group(2)}"
    else:
        message = _TOML_END.sub("", message)
        where = f"{path}, at the end"
    return ConfigError(
        f"{where}: not valid TOML: {message}", source=str(path), line=line, expected="TOML"
    )


def _check_shape(path: Path, text: str, data: dict[str, Any]) -> None:
    for name in TABLES:
        if name in data and not isinstance(data[name], dict):
            raise _bad_key(path, text, name, data[name], f"a table ([{name}])")
    for name in TABLES_OF_TABLES:
        if name not in data:
            continue
        section = data[name]
        if not isinstance(section, dict):
            raise _bad_key(path, text, name, section, f"tables, one [{name}.<name>] each")
        for entry, value in section.items():
            if not isinstance(value, dict):
                key = f"{name}.{entry}"
                expected = f"a table ([{key}])"
                if name == "models":  # [models] timeout = 300: meant for every model
                    expected += f'; a setting of every model goes in [models."*"] ({entry} = ...)'
                raise _bad_key(path, text, key, value, expected)


def bad_config_value(path: Path, key: str, value: Any, expected: str) -> ConfigError:
    """The error for ``key`` of ``oracle.toml`` at ``path`` holding ``value`` where
    ``expected`` fits, naming its line (the file is read again: only when it is wrong)."""
    return _bad_key(path, config_text(path), key, value, expected)


def config_error(
    path: Path,
    key: str,
    problem: str,
    expected: str,
    *,
    kind: type[E],
) -> E:
    """The error for ``key`` of ``oracle.toml`` at ``path``: ``path, line N: problem``.

    Args:
        path: the file (read again to find the line: only when something is wrong).
        key: the dotted key at fault (``budgets.user_week_tokens``).
        problem: one sentence naming the key, what is wrong and the fix.
        expected: what would fit, in words (:attr:`ConfigError.expected`).
        kind: the error class (:class:`ConfigError` or a subclass).
    """
    text = config_text(path)
    line = line_of(text, key)
    where = f"{path}, line {line}" if line else str(path)
    return kind(f"{where}: {problem}", source=str(path), key=key, line=line, expected=expected)


def config_text(path: Path) -> str:
    """The text of the config file ``path`` (``""`` when it cannot be read), read again
    only to say where something is."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _bad_key(path: Path, text: str, key: str, value: Any, expected: str) -> ConfigError:
    line = line_of(text, key)
    where = f"{path}, line {line}" if line else str(path)
    return ConfigError(
        f"{where}: {key} is {_kind(value)}; expected {expected}",
        source=str(path),
        key=key,
        line=line,
        expected=expected,
    )
