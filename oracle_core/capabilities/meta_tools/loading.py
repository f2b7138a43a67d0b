"""The loading meta-tool: its definition, and its result (every requested name checked,
then all loaded or none)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools.definition import MetaTool, RunCapabilities, strings
from oracle_core.capabilities.meta_tools.results import dumps, echo, error, fits
from oracle_core.plugins.core_tools import LOAD_CAPABILITY
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.values.messages import ToolCall, ToolResult

MAX_LOAD_NAMES = 8
"""Capabilities one ``load_capability`` call may load; more is an error naming the limit."""


@dataclass
class LoadOutcome:
    """What a ``load_capability`` call did.

    Attributes:
        content: the JSON text returned to the model.
        loaded: plugins newly added to the thread's ``loaded_plugins``, in request order.
        error: ``True`` when nothing was loaded because a name was bad.
    """

    content: str
    loaded: list[str] = field(default_factory=list)
    error: bool = False


def _entry(plugin: Plugin, already: bool) -> dict[str, Any]:
    return {
        **plugin.manifest.model_dump(mode="json", exclude_none=True),
        "alreadyAvailable": already,
        "tools": [
            {"name": t.name, "description": t.description}
            for t in plugin.tools
            if (t.visibility or plugin.visibility) != "silent"
        ],
    }


def load_capability(registry: Registry, loaded: Sequence[str], arguments: Any) -> LoadOutcome:
    """Check every requested name, then load them all, or none when any is bad.

    Unknown names are reported with the closest real names; silent plugins are internal
    and cannot be loaded. Suggestions come only from listable plugins.
    """
    names = arguments.get("names") if isinstance(arguments, dict) else None
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        return LoadOutcome(
            error(
                'load_capability takes {"names": ["name", ...]}: a non-empty array of '
                "capability names. Nothing was loaded."
            ),
            error=True,
        )
    names = list(dict.fromkeys(names))
    if len(names) > MAX_LOAD_NAMES:
        return LoadOutcome(
            error(
                f"load_capability loads at most {MAX_LOAD_NAMES} capabilities at once; you sent "
                f"{len(names)}. Nothing was loaded: load the ones you need first."
            ),
            error=True,
        )
    listed: list[str] | None = None
    problems = []
    for name in names:
        plugin = registry.get(name)
        if plugin is None:
            if listed is None:  # only when a name is wrong: suggestions cost a scan
                listed = [p.name for p in registry.listed()]
            close = difflib.get_close_matches(name[:64], listed, n=3, cutoff=0.5)
            hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
            problems.append(f"unknown capability {echo(name)}{hint}")
        elif plugin.visibility == "silent":
            problems.append(f"{name!r} is internal and cannot be loaded")
    if problems:
        message = (
            "; ".join(problems) + ". Nothing was loaded; call list_capabilities() for the names."
        )
        return LoadOutcome(error(message), error=True)

    entries = []
    newly: list[str] = []
    for name in names:
        plugin = registry.plugins[name]
        already = plugin.visibility == "always" or name in loaded
        if not already:
            newly.append(name)
        entries.append(_entry(plugin, already))
    content = dumps(entries)
    if not fits(content):  # long manifests: keep what the model needs to use the tools
        keep = ("name", "summary", "when_to_use", "alreadyAvailable", "tools")
        content = dumps([{k: e[k] for k in keep if k in e} for e in entries])
    return LoadOutcome(content, loaded=newly)


@dataclass(frozen=True)
class LoadCapability:
    """The loading meta-tool over a run's capabilities: a load takes effect at once."""

    state: RunCapabilities

    @property
    def tool(self) -> Tool:
        """The tool as the model is shown it."""
        return LOAD.tool

    async def __call__(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """Load every requested plugin, or none; the result names those newly loaded."""
        outcome = load_capability(self.state.registry, self.state.loaded, arguments)
        self.state.load(outcome.loaded)  # no await before: parallel loads see each other
        return ToolResult(
            call.id,
            call.name,
            outcome.content,
            is_error=outcome.error,
            loaded=tuple(outcome.loaded),
        )


LOAD = MetaTool(
    name=LOAD_CAPABILITY,
    description="Load capabilities.",
    parameters={"type": "object", "properties": {"names": strings("Capability names")}},
    handler=LoadCapability,
)
"""The loading meta-tool."""
