"""Names in ``oracle.toml`` that nothing reads: each a warning naming the file, the line, the
name and the closest known one, so a typo (``[plugin.weather]``, ``[sync_tools] shares``) is
not silently ignored.

Only names the core owns are checked here: the top-level tables and the keys of
``[sync_tools]`` (``[surface]``, ``[approvals]`` and ``[mcp.<name>]`` reject an unknown key
with an error of their own). A ``[plugins.<name>]`` table is checked against the plugins
found once they are known (:func:`unknown_plugin_tables`): a plugin that is not installed is
a warning, never an error, since an operator may uninstall a plugin and keep its table.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from oracle_core.settings.reading import TABLES, TABLES_OF_TABLES, line_of

log = logging.getLogger("oracle_core.settings")

TABLE_KEYS: Mapping[str, tuple[str, ...]] = {"sync_tools": ("share", "plugins")}
"""The keys of the one-table sections that the core reads without a check of its own."""

_SHOWN_TABLES = ", ".join(
    [f"[{name}.<name>]" for name in TABLES_OF_TABLES] + [f"[{name}]" for name in TABLES]
)


def closest(name: str, known: Collection[str]) -> str | None:
    """The known name nearest to ``name`` (``difflib``), if one is near enough."""
    found = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    if not found:  # a case slip: [Plugins.x]
        found = [k for k in known if k.lower() == name.lower()][:1]
    return found[0] if found else None


def _where(path: Path, text: str, key: str) -> str:
    line = line_of(text, key) or _first_line_under(text, key)
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


def warn_unknown_config_names(path: Path, data: Mapping[str, Any]) -> list[str]:
    """Log (and return) :func:`unknown_config_names` of ``oracle.toml`` at ``path``, read
    as ``data``, as warnings on the ``oracle_core.settings`` logger."""
    warnings = unknown_config_names(path, config_text(path), data) if _has_unknown(data) else []
    for warning in warnings:
        log.warning("%s", warning)
    return warnings


def _has_unknown(data: Mapping[str, Any]) -> bool:
    known = (*TABLES_OF_TABLES, *TABLES)
    if any(name not in known for name in data):
        return True
    return any(
        isinstance(data.get(table), dict) and any(k not in keys for k in data[table])
        for table, keys in TABLE_KEYS.items()
    )


def config_text(path: Path) -> str:
    """The text of the config file ``path`` (``""`` when it cannot be read), read again
    only to say where something is."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def unknown_config_names(path: Path, text: str, data: Mapping[str, Any]) -> list[str]:
    """One warning for each top-level table or key, and each ``[sync_tools]`` key, that the
    core does not read, naming the file, the line and the closest known name."""
    warnings: list[str] = []
    known = (*TABLES_OF_TABLES, *TABLES)
    for name, value in data.items():
        if name in known:
            continue
        near = closest(name, known)
        kind = "table" if isinstance(value, dict) else "key"
        shown = f"[{name}]" if kind == "table" else name
        hint = f" (did you mean [{near}]?)" if near else ""
        entry = next(iter(value), None) if isinstance(value, dict) else None
        keys = ""
        if entry is not None and isinstance(value[entry], dict):  # [name.entry]
            shown = f"[{name}.{entry}]"
            if near in TABLES_OF_TABLES:
                hint = f" (did you mean [{near}.{entry}]?)"
        elif isinstance(value, dict) and value:  # [server] port = 9000: name its keys too
            names = [str(k) for k in value]
            keys = f" with its key{'s' if len(names) > 1 else ''} " + ", ".join(names[:5])
            keys += ", ..." if len(names) > 5 else ""
        warnings.append(
            f"{_where(path, text, name)}: unknown {kind} {shown}{keys} is ignored{hint}; "
            f"the tables are {_SHOWN_TABLES}"
        )
    for table, table_keys in TABLE_KEYS.items():
        section = data.get(table)
        if not isinstance(section, dict):
            continue
        for key in section:
            if key in table_keys:
                continue
            near = closest(key, table_keys)
            hint = f" (did you mean {near}?)" if near else ""
            warnings.append(
                f"{_where(path, text, f'{table}.{key}')}: unknown key {key!r} of [{table}] is "
                f"ignored{hint}; its keys are {', '.join(table_keys)}"
            )
    return warnings


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
