"""Problems of a manifest's examples: each names a tool of the plugin, with arguments that fit it."""

from __future__ import annotations

from collections.abc import Sequence

from oracle_core.authoring.manifest import PluginManifest
from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import ManifestError, ToolArgumentsError
from oracle_core.plugins.validate.problems import Problem


def example_problems(manifest: PluginManifest, tools: Sequence[Tool]) -> list[Problem]:
    """Each example must name a tool of the plugin, with arguments valid for its schema."""
    by_name = {t.name: t for t in tools}
    found: list[Problem] = []
    for index, example in enumerate(manifest.examples):
        at = f"examples[{index}]"
        target = by_name.get(example.tool)
        if target is None:
            known = ", ".join(by_name) or "none"
            found.append(
                Problem(
                    f"manifest field '{at}.tool' names {example.tool!r}, which is not a tool of "
                    f"this plugin (its tools: {known}); name one of them",
                    ManifestError,
                    f"{at}.tool",
                )
            )
            continue
        try:
            target.validate(example.args)
        except ToolArgumentsError as error:
            found.append(
                Problem(
                    f"manifest field '{at}.args' does not fit {example.tool!r}: {error}; "
                    "make the example's args match the tool's parameters",
                    ManifestError,
                    f"{at}.args",
                )
            )
        except Exception:
            pass  # the tool cannot validate anything: reported with the tool
    return found
