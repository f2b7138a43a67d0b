"""Every table of ``oracle.toml`` the core reads, each with the one function that reads it.

Every command checks the whole file before it does anything else (:func:`config_problems`,
through :meth:`Settings.check_config <oracle_core.settings.Settings.check_config>`), and
the oracle reads each table through the same function when it needs it: a table is never
accepted by one and refused by the other. A table or key of no known name is refused too
(:mod:`oracle_core.settings.unknown`).

Two tables hold what others read: the keys of ``[plugins.<name>]`` are the plugin's (its
config model checks them when the oracle assembles its plugins), and ``[mcp.<name>]`` is
an MCP server's, reported like a broken plugin when it is wrong (docs/mcp.md). Their shape
(a table of tables) is checked when the file is read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from oracle_core.errors import ConfigError, SurfaceError
from oracle_core.settings.aliases import read_aliases
from oracle_core.settings.approvals import read_approvals
from oracle_core.settings.budgets import read_budgets
from oracle_core.settings.model_tables import read_model_tables
from oracle_core.settings.surface_table import read_surface
from oracle_core.settings.sync_tools import read_shares
from oracle_core.settings.table import of_owner
from oracle_core.settings.unknown import unknown_config_names

TableReader = Callable[[Path, Mapping[str, Any]], object]
"""Reads one table of ``oracle.toml`` (the file's path, the whole file as read) and returns
it checked; raises :class:`~oracle_core.errors.ConfigError` (or
:class:`~oracle_core.errors.SurfaceError` for ``[surface]``) naming the file, line and key."""


@dataclass(frozen=True)
class Table:
    """One top-level table of ``oracle.toml``.

    Attributes:
        name: its name (``budgets``; ``plugins`` for the ``[plugins.<name>]`` tables).
        read: the function that reads and checks it.
        summary: what it holds and where it is documented.
    """

    name: str
    read: TableReader
    summary: str


def _as_written(name: str) -> TableReader:
    def read(path: Path, data: Mapping[str, Any]) -> object:
        return data.get(name, {})

    return read


def _models(path: Path, data: Mapping[str, Any]) -> object:
    try:
        aliases = read_aliases(path, data)
    except ConfigError:  # said by [aliases] itself
        aliases = {}
    return read_model_tables(data.get("models", {}), path, lambda n: aliases.get(n, n))


def _sync_tools(path: Path, data: Mapping[str, Any]) -> object:
    return read_shares(data.get("sync_tools", {}), None, path)


_READERS: Mapping[str, TableReader] = MappingProxyType(
    {
        "plugins": _as_written("plugins"),
        "mcp": _as_written("mcp"),
        "models": _models,
        "surface": read_surface,
        "approvals": read_approvals,
        "sync_tools": _sync_tools,
        "budgets": read_budgets,
        "aliases": read_aliases,
    }
)

CORE_TABLES: tuple[Table, ...] = tuple(
    Table(setting.name, _READERS[setting.name], setting.help) for setting in of_owner("oracle.toml")
)
"""The tables the core reads, in the order of the settings table
(:mod:`oracle_core.settings.table`), which ``oracle config --check`` reports them in; each
table's summary is its row's help."""


def config_problems(path: Path, data: Mapping[str, Any]) -> list[ConfigError | SurfaceError]:
    """Every problem of ``oracle.toml`` at ``path``, read as ``data``: each unknown top-level
    name, then the first problem of each table, in :data:`CORE_TABLES` order."""
    problems: list[ConfigError | SurfaceError] = list(unknown_config_names(path, data))
    for table in CORE_TABLES:
        if table.name not in data:
            continue
        try:
            table.read(path, data)
        except (ConfigError, SurfaceError) as error:
            problems.append(error)
    return problems
