"""Names in ``oracle.toml`` that nothing reads: a top-level table or key of no known name is an
error naming the file, the line, the name and the closest known one, so a typo
(``[plugin.weather]``, ``[budget]``) never leaves a setting silently unread.

The known top-level names are the ``oracle.toml`` tables of the settings table
(:mod:`oracle_core.settings.table`). Each table checks its own keys where it is read
(:mod:`oracle_core.settings.tables`). A ``[plugins.<name>]`` table is checked against the
plugins found once they are known (:func:`unknown_plugin_tables`): a plugin that is not
installed is a warning, never an error, since an operator may uninstall a plugin and keep
its table.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from oracle_core.errors import ConfigError
from oracle_core.settings.reading import E, config_error, config_text, line_of
from oracle_core.settings.table import TABLES, TABLES_OF_TABLES

log = logging.getLogger("oracle_core.settings")

_SHOWN_TABLES = ", ".join(
    [f"[{name}.<name>]" for name in TABLES_OF_TABLES] + [f"[{name}]" for name in TABLES]
)


def closest(name: str, known: Collection[str]) -> str | None:
    """The known name nearest to ``name`` (``difflib``), if one is near enough."""
    found = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    if not found:  # a case slip: [Plugins.x]
        found = [k for k in known if k.lower() == name.lower()][:1]
    return found[0] if found else None


def unknown_key(
    path: Path,
    table: str,
    key: object,
    known: Sequence[str],
    fix: str,
    *,
    kind: type[E],
    expected: str | None = None,
) -> E:
    """The error for ``key`` of ``[table]`` in ``oracle.toml`` at ``path``, which nothing
    reads: ``path, line N: [table] has unknown key 'key' (did you mean ...?): fix``.

    Args:
        path: the file.
        table: the table's name (``budgets``).
        key: the key as written.
        known: the keys the table takes (the closest is suggested).
        fix: what the table takes, as a sentence.
        kind: the error class.
        expected: :attr:`ConfigError.expected` (default: the known keys).
    """
    near = closest(str(key), known)
    hint = f" (did you mean {near}?)" if near else ""
    return config_error(
        path,
        f"{table}.{key}",
        f"[{table}] has unknown key {str(key)!r}{hint}: {fix}",
        expected or ", ".join(known),
        kind=kind,
    )


def _line(text: str, key: str) -> int | None:
    return line_of(text, key) or _first_line_under(text, key)


def _where(path: Path, text: str, key: str) -> str:
    line = _line(text, key)
    return f"{path}, line {line}" if line else str(path)


def _first_line_under(text: str, key: str) -> int | None:
    """The first line of a table whose dotted name starts with ``key.`` (``[plugin.weather]``
    for ``plugin``), or of an assignment of a dotted key ``key.x = ...``."""
    prefix = f"{key}."
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip().lstrip("[").strip()
        name = stripped.split("]", 1)[0].split("=", 1)[0].strip().strip("\"'")
        if name.startswith(prefix):
            return number
    return None


def unknown_config_names(path: Path, data: Mapping[str, Any]) -> list[ConfigError]:
    """One error for each top-level table or key of ``oracle.toml`` at ``path`` (read as
    ``data``) that the core does not read, naming the file, the line, the closest known
    name and the fix."""
    known = (*TABLES_OF_TABLES, *TABLES)
    unknown = [name for name in data if name not in known]
    text = config_text(path) if unknown else ""
    errors: list[ConfigError] = []
    for name in unknown:
        value = data[name]
        near = closest(name, known)
        kind = "table" if isinstance(value, dict) else "key"
        shown = f"[{name}]" if kind == "table" else name
        fix = f"rename it to [{near}]" if near else "remove it"
        entry = next(iter(value), None) if isinstance(value, dict) else None
        keys = ""
        if entry is not None and isinstance(value[entry], dict):  # [name.entry]
            shown = f"[{name}.{entry}]"
            if near in TABLES_OF_TABLES:
                fix = f"rename it to [{near}.{entry}]"
        elif isinstance(value, dict) and value:  # [server] port = 9000: name its keys too
            names = [str(k) for k in value]
            keys = f" with its key{'s' if len(names) > 1 else ''} " + ", ".join(names[:5])
            keys += ", ..." if len(names) > 5 else ""
        errors.append(
            ConfigError(
                f"{_where(path, text, name)}: unknown {kind} {shown}{keys}: oracle reads no "
                f"such {kind}; {fix} (the tables are {_SHOWN_TABLES})",
                source=str(path),
                key=name,
                line=_line(text, name),
                expected=f"one of the tables {_SHOWN_TABLES}",
            )
        )
    return errors


def unknown_plugin_tables(
    path: Path, configured: Collection[str], known: Collection[str]
) -> list[str]:
    """One warning for each ``[plugins.<name>]`` of ``configured`` that names none of the
    ``known`` plugins (installed, given in code, or an MCP server), with the closest name."""
    text = config_text(path) if any(name not in known for name in configured) else ""
    warnings = []
    for name in configured:
        if name in known:
            continue
        near = closest(name, known)
        hint = f" (did you mean [plugins.{near}]?)" if near else ""
        warnings.append(
            f"{_where(path, text, f'plugins.{name}')}: [plugins.{name}] configures a plugin "
            f"that is not installed{hint}; it is ignored (oracle plugins lists the installed "
            "ones)"
        )
    return warnings
