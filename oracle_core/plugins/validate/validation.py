"""One plugin's validation: every problem of what its assembly hooks gave, found at once.

:func:`validate` runs the checks of each kind in turn (hook results, the manifest, tools,
examples, connections) and gathers their errors and warnings into a :class:`Validation`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from oracle_core.authoring.manifest import ManifestWarning, PluginManifest
from oracle_core.authoring.middleware import Middleware
from oracle_core.authoring.routes import Route
from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import PluginConfigError, PluginError
from oracle_core.plugins.validate.connections import connection_problems
from oracle_core.plugins.validate.examples import example_problems
from oracle_core.plugins.validate.manifest import read_manifest, warning_problems
from oracle_core.plugins.validate.problems import Problem, plugin_error
from oracle_core.plugins.validate.results import HookResults, listed, timeout_problem
from oracle_core.plugins.validate.tools import tool_problems

Trusted = Callable[[PluginManifest, Sequence[Tool]], bool]
"""Whether a plugin's tools and examples were found sound before (the start-up cache)."""


@dataclass(frozen=True)
class Validation:
    """Everything the validator found for one plugin.

    Attributes:
        name: the manifest's name when the manifest is valid, else the source's name.
        manifest: the valid manifest (``version`` filled in), or ``None``.
        tools: the tools its ``oracle_tools`` returned.
        middleware: the middleware its ``oracle_middleware`` returned.
        routes: the routes its ``oracle_routes`` returned.
        errors: problems that leave the plugin out.
        warnings: soft limits it exceeds (it still loads).
    """

    name: str
    manifest: PluginManifest | None
    tools: list[Tool]
    middleware: list[Middleware]
    routes: list[Route]
    errors: list[Problem]
    warnings: list[Problem]

    def failure(self, distribution: str | None = None) -> PluginError:
        """One error carrying every error problem (raise only when there are some)."""
        return plugin_error(self.errors, plugin=self.name, distribution=distribution)

    def manifest_warnings(self) -> list[ManifestWarning]:
        """The warnings as the registry keeps them (``message`` is the whole sentence)."""
        return [ManifestWarning(self.name, w.field or "tools", w.message) for w in self.warnings]


def validate(
    name: str,
    results: HookResults,
    *,
    version: str | None = None,
    registration: Sequence[Problem] = (),
    trusted: Trusted | None = None,
) -> Validation:
    """Check everything one plugin's assembly hooks gave, and return every problem.

    Args:
        name: the plugin's source name (used until its manifest is known to be valid).
        results: what its hooks returned or raised.
        version: its distribution's version, the manifest's default ``version``.
        registration: problems :func:`~oracle_core.plugins.validate.hooks.hook_problems`
            found before it was registered.
        trusted: says whether this manifest and these tools were found sound before (same
            distribution files, same signatures); their tool and example checks, which
            build every tool's schema, are then skipped.
    """
    errors = list(registration)
    if results.config_error is not None:
        # Its settings come first: they are why no hook after the manifest was called.
        key = results.config_error.key
        errors += [Problem(p, PluginConfigError, key) for p in results.config_error.problems]
    manifest = read_manifest(results, errors)
    if manifest is not None and manifest.version is None and version is not None:
        manifest = manifest.model_copy(update={"version": version})
    tools = listed(results, "oracle_tools", Tool, errors)
    middleware = listed(results, "oracle_middleware", Middleware, errors)
    routes = listed(results, "oracle_routes", Route, errors)
    if results.timed_out is not None:
        errors.append(timeout_problem(results.timed_out))
    warnings: list[Problem] = []
    plugin = manifest.name if manifest is not None else name
    visibility = manifest.visibility if manifest is not None else "on-demand"
    known = manifest is not None and trusted is not None and trusted(manifest, tools)
    if results.config_error is not None:
        known = True  # its tools were never asked for: nothing to check them against
    if not known:
        tool_errors, tool_warnings = tool_problems(plugin, visibility, tools)
        errors += tool_errors
        warnings += tool_warnings
    if manifest is not None:
        if not known:
            errors += example_problems(manifest, tools)
        errors += connection_problems(manifest, tools)  # cheap: only tools that list some
        warnings = warning_problems(manifest, tools) + warnings
    return Validation(
        name=plugin,
        manifest=manifest,
        tools=tools,
        middleware=middleware,
        routes=routes,
        errors=errors,
        warnings=warnings,
    )
