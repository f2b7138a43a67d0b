"""Problems of the connections a plugin's tools list: declared by the plugin, readable by the tool."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from oracle_core.authoring.manifest import PluginManifest
from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import ManifestError, ToolDefinitionError
from oracle_core.plugins.validate.problems import Problem


def connection_problems(manifest: PluginManifest, tools: Sequence[Tool]) -> list[Problem]:
    """Each connection a tool lists must be declared by its plugin, and the tool must take
    a :class:`~oracle_core.ToolContext` to read it."""
    declared = [c.name for c in manifest.connections]
    found: list[Problem] = []
    for tool in tools:
        if not tool.connections:
            continue
        where = f"tool {tool.name!r}"
        for name in tool.connections:
            if name not in declared:
                close = difflib.get_close_matches(name, declared, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                found.append(
                    Problem(
                        f"{where} lists connection {name!r}, which plugin {manifest.name!r} does "
                        f"not declare{hint} (it declares: {', '.join(declared) or 'none'}); add "
                        f"Connection(name={name!r}, ...) to its manifest's connections, or "
                        "remove it from @tool(connections=[...])",
                        ManifestError,
                        "connections",
                    )
                )
        try:
            takes_context = tool.context_parameter is not None
        except ToolDefinitionError:
            continue  # reported with the tool
        if not takes_context:
            found.append(
                Problem(
                    f"{where} lists connections but takes no ToolContext parameter, so it "
                    "cannot read them: add a parameter `ctx: ToolContext` and call "
                    "ctx.credential(name)"
                )
            )
    return found
