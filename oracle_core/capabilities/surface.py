"""Surfaces: what an oracle shows the model of its tools.

- :class:`Catalog` (the default): the meta-tools, the Tier-1 block, and the gate that shows
  on-demand tools once their plugin is loaded in a thread.
- :class:`Specialist`: an exact list of 1 to 10 tools, each named ``plugin.tool``. The model
  is shown those tools on every call and nothing else: no meta-tools, no Tier-1 block. The
  gate enforces the same list, so a call to any other tool (a meta-tool included) is refused.

The rules are checked twice: the shape of the list (count, duplicates, syntax, meta-tools)
when a :class:`Specialist` is made, and the names against the assembled plugins (unknown
tools, whole plugins) when the oracle is built (:func:`specialist_tools`). Connection
management, where the core enables it, is a core tool on the surface and counts toward the
ten: pass it as ``core`` to :func:`specialist_tools`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from oracle_core.authoring.manifest import NAME_PATTERN
from oracle_core.authoring.tools.tool import TOOL_NAME_PATTERN, Tool
from oracle_core.errors import SurfaceError
from oracle_core.plugins.registry import META_TOOL_NAMES, Registry
from oracle_core.settings.surface_table import (
    SPECIALIST_HOW,
    shown,
    surface_table,
)

if TYPE_CHECKING:
    from oracle_core.settings import Settings

MAX_SPECIALIST_TOOLS = 10
"""The most tools a specialist surface may show, core tools (connection management) included."""

_HOW = SPECIALIST_HOW


@dataclass(frozen=True)
class Catalog:
    """The default surface: meta-tools, the Tier-1 block, tools shown once loaded."""

    kind: ClassVar[Literal["catalog"]] = "catalog"

    def describe(self) -> dict[str, Any]:
        """The surface as JSON (``oracle prompt --json``)."""
        return {"kind": self.kind}


@dataclass(frozen=True, init=False)
class Specialist:
    """A surface of exactly the named tools: no meta-tools, no Tier-1 block.

    Args:
        tools: 1 to 10 distinct names, each ``plugin.tool`` (``"weather.get_forecast"``).
            A whole plugin, a meta-tool, a duplicate or more than ten are refused.

    Raises:
        SurfaceError: naming every problem of the list and how to fix it. Whether each
            tool exists is checked when the oracle is built.
    """

    tools: tuple[str, ...]
    kind: ClassVar[Literal["specialist"]] = "specialist"

    def __init__(self, tools: Iterable[str]) -> None:
        names = _as_names(tools)
        found = problems(names)
        if found:
            raise _error(found)
        object.__setattr__(self, "tools", names)

    def describe(self) -> dict[str, Any]:
        """The surface as JSON (``oracle prompt --json``)."""
        return {"kind": self.kind, "tools": list(self.tools)}


Surface = Catalog | Specialist
"""What an oracle shows the model: :class:`Catalog` (default) or :class:`Specialist`."""


def _error(found: Sequence[str]) -> SurfaceError:
    if len(found) == 1:
        return SurfaceError(found[0], problems=found)
    lines = [f"the specialist surface has {len(found)} problems:", *(f"  - {p}" for p in found)]
    return SurfaceError("\n".join(lines), problems=found)


def _as_names(tools: object) -> tuple[str, ...]:
    if isinstance(tools, str | bytes | Mapping):
        raise SurfaceError(
            f"Specialist(tools=...) takes a list of tool names, not a {type(tools).__name__} "
            f"({shown(tools)}): {_HOW}"
        )
    if not isinstance(tools, Iterable):
        raise SurfaceError(
            f"Specialist(tools=...) takes a list of tool names, not {type(tools).__name__}: {_HOW}"
        )
    names = tuple(tools)
    odd = [f"item {i} is {type(n).__name__}" for i, n in enumerate(names) if not isinstance(n, str)]
    if odd:
        raise SurfaceError(
            f"Specialist(tools=...) takes tool names as strings, but {', '.join(odd[:5])}: {_HOW}"
        )
    return names


def problems(names: Sequence[str], registry: Registry | None = None) -> list[str]:
    """Every problem of a specialist tool list, each a sentence naming the entry and the fix.

    Args:
        names: the names as the operator wrote them.
        registry: the assembled plugins; when given, each name must be a tool of the plugin
            it names, and a bare name is answered with what it is (a whole plugin, or a tool
            written without its plugin). Without it only the list's shape is checked.

    Returns:
        The problems in list order; empty when the list is valid.
    """
    found: list[str] = []
    if not names:
        return [f"a specialist surface needs at least one tool: {_HOW}"]
    if len(names) > MAX_SPECIALIST_TOOLS:
        found.append(
            f"a specialist surface shows at most {MAX_SPECIALIST_TOOLS} tools, and "
            f"{len(names)} are named: keep the ten the oracle needs, or use the catalog "
            "surface (Catalog()), which shows tools on demand"
        )
    seen: set[str] = set()
    for name in names:
        if name in seen:
            found.append(f"{shown(name)} is named twice: name each tool once")
            continue
        seen.add(name)
        problem = _syntax(name) or (_existence(name, registry) if registry is not None else None)
        if problem is not None and registry is not None and "." not in name:
            problem = _bare(name, registry) or problem
        if problem is not None:
            found.append(problem)
    return found


def _syntax(name: str) -> str | None:
    """What is wrong with ``name`` as a ``plugin.tool`` name, without looking at plugins."""
    plugin, dot, tool = name.partition(".")
    if name in META_TOOL_NAMES or tool in META_TOOL_NAMES:
        return (
            f"{shown(name)} is a meta-tool of the catalog surface: a specialist surface has "
            "no meta-tools and cannot be mixed with the catalog surface; remove it, or use "
            "Catalog() instead of Specialist(...)"
        )
    if not dot:
        return (
            f"{shown(name)} is not a plugin.tool name: a specialist surface names single "
            f"tools, never a whole plugin; {_HOW}"
        )
    if tool in ("", "*"):
        return (
            f"{shown(name)} names the whole plugin {shown(plugin)}: a specialist surface "
            "names single tools; list the ones you need, each as plugin.tool"
        )
    if not NAME_PATTERN.fullmatch(plugin) or not TOOL_NAME_PATTERN.fullmatch(tool):
        return (
            f"{shown(name)} is not a plugin.tool name (a lowercase plugin name, one dot, "
            f"then the tool's name, no spaces): {_HOW}"
        )
    return None


def _qualified(registry: Registry) -> list[str]:
    return [f"{b.plugin.name}.{b.name}" for b in registry.tools.values()]


def _suggest(name: str, registry: Registry) -> str:
    close = difflib.get_close_matches(name[:200], _qualified(registry), n=3, cutoff=0.5)
    return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""


def _failure(plugin: str, registry: Registry) -> str:
    for failure in registry.failures:
        if failure.plugin == plugin:
            return f"; it failed to load: {failure}"
    return ""


def _existence(name: str, registry: Registry) -> str | None:
    """What is wrong with a well-formed ``plugin.tool`` name in ``registry``."""
    plugin, _, tool = name.partition(".")
    bound = registry.tools.get(tool)
    if bound is not None and bound.plugin.name == plugin:
        return None
    if plugin not in registry:
        return (
            f"{shown(name)} names the plugin {shown(plugin)}, which is not part of this "
            f"oracle{_failure(plugin, registry)}{_suggest(name, registry)}: install or enable "
            "it, or fix the name"
        )
    if bound is not None:
        return (
            f"{shown(name)}: plugin {shown(plugin)} has no tool {shown(tool)}; that tool "
            f"belongs to {bound.plugin.name!r}, so write {bound.plugin.name}.{tool}"
        )
    return (
        f"{shown(name)}: plugin {shown(plugin)} has no tool {shown(tool)}"
        f"{_suggest(name, registry)}; `oracle plugins` lists every tool"
    )


def _bare(name: str, registry: Registry) -> str | None:
    """A better answer for a name without a dot: a whole plugin, or a tool without its plugin."""
    if name in META_TOOL_NAMES:
        return None
    plugin = registry.get(name)
    if plugin is not None:
        tools = ", ".join(f"{name}.{t.name}" for t in plugin.tools[:MAX_SPECIALIST_TOOLS])
        return (
            f"{shown(name)} names the whole plugin: a specialist surface names single tools; "
            f"list the ones you need{f' (its tools: {tools})' if tools else ''}"
        )
    bound = registry.tools.get(name)
    if bound is not None:
        return f"{shown(name)} needs its plugin: write {bound.plugin.name}.{name}"
    return None


def specialist_tools(
    surface: Specialist, registry: Registry, core: Sequence[Tool] = ()
) -> tuple[Tool, ...]:
    """The tools a specialist surface shows, in the order the operator named them.

    Args:
        surface: the specialist surface.
        registry: the assembled (or started) plugins.
        core: tools the core itself adds to the surface, after the named ones (connection
            management, where enabled); they count toward the ten.

    Raises:
        SurfaceError: when a name is not a tool of the plugin it names (with the closest
            real names), or the named and core tools together are more than ten.
    """
    found = problems(surface.tools, registry)
    total = len(surface.tools) + len(core)
    if not found and total > MAX_SPECIALIST_TOOLS:
        extra = ", ".join(t.name for t in core)
        found.append(
            f"a specialist surface shows at most {MAX_SPECIALIST_TOOLS} tools, and "
            f"{len(surface.tools)} are named plus {len(core)} of the core ({extra}), which "
            "count toward the ten: name fewer tools"
        )
    if found:
        raise _error(found)
    return (*(registry.tools[n.partition(".")[2]].tool for n in surface.tools), *core)


def surface_from_config(
    section: Mapping[str, Any], registry: Registry | None = None, *, source: str = "[surface]"
) -> Surface:
    """The surface the ``[surface]`` table of ``oracle.toml`` describes.

    ``kind = "catalog"`` (the default when the table is absent or empty) or
    ``kind = "specialist"`` with ``tools = ["plugin.tool", ...]``.

    Args:
        section: the table's contents.
        registry: the assembled plugins, for messages that say what a bad name is.
        source: where the table is, for messages (``[surface] in /home/.../oracle.toml``).

    Raises:
        SurfaceError: an unknown key or kind, a tool list on the catalog surface, a
            specialist surface without a valid tool list.
    """
    table = surface_table(section, source=source)
    if table.kind == "catalog":
        return Catalog()
    tools = table.tools
    try:
        names = _as_names(tools)
        found = problems(names, registry)
        if found:
            raise _error(found)
        return Specialist(names)
    except SurfaceError as error:
        raise SurfaceError(f"{source}: {error}", problems=error.problems) from None


def config_problem(settings: Settings, registry: Registry) -> str | None:
    """Why the ``[surface]`` table of ``settings`` cannot serve ``registry`` (``None``: it can).

    For commands that list plugins whatever the surface says (``oracle plugins``), so an
    operator can still see the tool names while fixing the table.
    """
    try:
        surface_from_config(
            settings.surface_config(), registry, source=f"[surface] in {settings.config_path}"
        )
    except SurfaceError as error:
        return str(error)
    return None
