"""The ``[surface]`` table of ``oracle.toml``: its keys, its kind and the type of its tool list.

What the names in the list must be (``plugin.tool``, at most ten, tools this oracle has) is
checked by :mod:`oracle_core.capabilities.surface` once the plugins are known; this module
reads what can be checked with the settings, so every command refuses a typo in one line::

    [surface]
    kind = "specialist"                         # or "catalog" (the default)
    tools = ["weather.get_forecast", "memory.search_memory"]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle_core.errors import SurfaceError
from oracle_core.settings.reading import config_text, line_of
from oracle_core.settings.unknown import closest

SURFACE_KINDS = ("catalog", "specialist")
"""The values of ``kind`` in the ``[surface]`` table of ``oracle.toml``."""

SURFACE_KEYS = ("kind", "tools")
"""The keys ``[surface]`` takes."""

SPECIALIST_HOW = "name 1 to 10 single tools as plugin.tool, for example 'weather.get_forecast'"
"""How to write a specialist surface's tool list, for the messages that refuse one."""


@dataclass(frozen=True)
class SurfaceTable:
    """A ``[surface]`` table whose keys, kind and list type are right.

    Attributes:
        kind: ``"catalog"`` or ``"specialist"``.
        tools: the tool list as written (``None`` when there is none, as on the catalog);
            its entries are checked by the specialist surface.
    """

    kind: str = "catalog"
    tools: list[Any] | None = None


def shown(value: object) -> str:
    """A name from a config or a caller, quoted and cut so a message stays readable."""
    text = repr(value)
    return text if len(text) <= 70 else f"{text[:67]}..."


def surface_table(
    section: Mapping[str, Any], *, source: str = "[surface]", path: Path | None = None
) -> SurfaceTable:
    """Check a ``[surface]`` table as read.

    Args:
        section: the table's contents.
        source: where the table is, for the messages (``[surface] in /home/.../oracle.toml``).
        path: the file, read again for the line of a key at fault.

    Raises:
        SurfaceError: an unknown key or kind, a tool list on the catalog surface, a
            specialist surface without a tool list; one line naming where, the key and
            the fix.
    """

    def where(key: str) -> str:
        line = line_of(config_text(path), f"surface.{key}") if path else None
        return f"{source}, line {line}" if line else source

    unknown = sorted(str(key) for key in section if key not in SURFACE_KEYS)
    if unknown:
        near = closest(unknown[0], SURFACE_KEYS)
        hint = f" (did you mean {near}?)" if near else ""
        raise SurfaceError(
            f"{where(unknown[0])}: unknown key(s) {', '.join(map(shown, unknown))}{hint}; the "
            'table takes kind ("catalog" or "specialist") and tools (a list of plugin.tool '
            "names)"
        )
    kind = section.get("kind")
    tools = section.get("tools")
    if kind is None:
        if tools is not None:
            raise SurfaceError(
                f'{where("tools")} sets tools but no kind: add kind = "specialist" (the '
                "default catalog surface takes no tool list)"
            )
        return SurfaceTable()
    if kind not in SURFACE_KINDS:
        raise SurfaceError(
            f'{where("kind")}: kind = {shown(kind)} is not a surface; use kind = "catalog" '
            'or kind = "specialist"'
        )
    if kind == "catalog":
        if tools is not None:
            raise SurfaceError(
                f'{where("tools")}: kind = "catalog" cannot be mixed with a tool list: remove '
                'tools for the catalog surface, or set kind = "specialist" to show only those '
                "tools"
            )
        return SurfaceTable()
    if tools is None:
        raise SurfaceError(
            f'{where("kind")}: kind = "specialist" needs tools = [...]: {SPECIALIST_HOW}'
        )
    if not isinstance(tools, list):
        raise SurfaceError(
            f"{where('tools')}: tools must be a list of plugin.tool names, not "
            f"{type(tools).__name__}: {SPECIALIST_HOW}"
        )
    return SurfaceTable("specialist", list(tools))


def read_surface(path: Path, data: Mapping[str, Any]) -> SurfaceTable:
    """The ``[surface]`` of ``oracle.toml`` at ``path``, read as ``data``.

    Raises:
        SurfaceError: see :func:`surface_table`.
    """
    return surface_table(data.get("surface", {}), source=f"[surface] in {path}", path=path)
