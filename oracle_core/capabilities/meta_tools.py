"""The two meta-tools the core registers: ``list_capabilities`` and ``load_capability``.

Their schemas are deliberately tiny (together well under 100 tokens) because they are
sent on every model call.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.tools import Tool

LIST_CAPABILITIES = "list_capabilities"
LOAD_CAPABILITY = "load_capability"

META_TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": LIST_CAPABILITIES,
            "description": "List capabilities you can load.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": LOAD_CAPABILITY,
            "description": "Load capabilities by name to get their tools.",
            "parameters": {
                "type": "object",
                "properties": {"names": {"type": "array", "items": {"type": "string"}}},
                "required": ["names"],
            },
        },
    },
)
"""The meta-tools as OpenAI function definitions, sent first on every model call."""


def _run_by_core(**_: Any) -> Any:
    raise RuntimeError("meta-tools are run by the oracle's runtime, not called directly")


META_TOOLS: tuple[Tool, ...] = tuple(
    Tool(
        name=s["function"]["name"],
        description=s["function"]["description"],
        parameters=s["function"]["parameters"],
        function=_run_by_core,
    )
    for s in META_TOOL_SCHEMAS
)
"""The meta-tools as :class:`~oracle_core.Tool` objects, in the order they are shown."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def list_capabilities(registry: Registry, loaded: Sequence[str]) -> str:
    """The ``list_capabilities`` result: every non-silent plugin, in registration order."""
    return _dumps(
        [
            {
                "name": p.name,
                "summary": p.manifest.summary,
                "visibility": p.visibility,
                "loaded": p.visibility == "always" or p.name in loaded,
                "category": p.manifest.category,
                "tags": p.manifest.tags,
            }
            for p in registry.listed()
        ]
    )


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
            _dumps(
                {
                    "error": 'load_capability takes {"names": ["name", ...]}: a non-empty array of capability names. Nothing was loaded.'
                }
            ),
            error=True,
        )
    names = list(dict.fromkeys(names))
    listed = [p.name for p in registry.listed()]
    problems = []
    for name in names:
        plugin = registry.get(name)
        if plugin is None:
            close = difflib.get_close_matches(name, listed, n=3, cutoff=0.5)
            hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
            problems.append(f"unknown capability {name!r}{hint}")
        elif plugin.visibility == "silent":
            problems.append(f"{name!r} is internal and cannot be loaded")
    if problems:
        message = (
            "; ".join(problems) + ". Nothing was loaded; call list_capabilities() for the names."
        )
        return LoadOutcome(_dumps({"error": message}), error=True)

    entries = []
    newly: list[str] = []
    for name in names:
        plugin = registry.plugins[name]
        already = plugin.visibility == "always" or name in loaded
        if not already:
            newly.append(name)
        entries.append(_entry(plugin, already))
    return LoadOutcome(_dumps(entries), loaded=newly)
