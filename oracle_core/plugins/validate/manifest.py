"""Problems of a plugin's manifest: the one ``oracle_manifest`` returned, and its warnings."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from oracle_core.authoring.manifest import (
    PluginManifest,
    describe_validation_error,
    manifest_warnings,
)
from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import ManifestError
from oracle_core.plugins.findability import findability_warnings
from oracle_core.plugins.validate.problems import Problem
from oracle_core.plugins.validate.results import HookResults


def read_manifest(results: HookResults, errors: list[Problem]) -> PluginManifest | None:
    """The valid manifest ``oracle_manifest`` returned, or ``None`` with its problems added
    to ``errors`` (none when the hook was not reached)."""
    error = results.raised.get("oracle_manifest")
    if isinstance(error, ValidationError):
        errors += _field_problems(error)
        return None
    if error is not None:
        errors.append(Problem(f"hook oracle_manifest raised {type(error).__name__}: {error}"))
        return None
    returned = results.results.get("oracle_manifest")
    if returned is None:
        return None  # not reached: the hook timed out, or registration failed
    if not returned:
        errors.append(
            Problem(
                "has no manifest: implement `@hookimpl def oracle_manifest() -> PluginManifest`",
                ManifestError,
            )
        )
        return None
    if len(returned) > 1:
        errors.append(
            Problem(
                f"has {len(returned)} oracle_manifest implementations: keep exactly one",
                ManifestError,
            )
        )
        return None
    raw = returned[0]
    if isinstance(raw, PluginManifest):
        config = raw.config  # excluded from dumps: it is a class, not data
        raw = raw.model_dump(exclude_unset=True)
        if config is not None:
            raw["config"] = config
    if not isinstance(raw, dict):
        errors.append(
            Problem(
                f"oracle_manifest returned {type(returned[0]).__name__}: return a PluginManifest",
                ManifestError,
            )
        )
        return None
    try:
        return PluginManifest.model_validate(raw)
    except ValidationError as invalid:
        errors += _field_problems(invalid)
        return None


def _field_problems(error: ValidationError) -> list[Problem]:
    # A Connection(...) built inside oracle_manifest fails on its own: name its field in full.
    prefix = "connections." if error.title == "Connection" else ""
    return [
        Problem(f"manifest field {prefix + name!r} {message}", ManifestError, prefix + name)
        for name, message in describe_validation_error(error)
    ]


def warning_problems(manifest: PluginManifest, tools: Sequence[Tool]) -> list[Problem]:
    """Every warning of a valid manifest (soft limits it exceeds, what makes it hard to find:
    the plugin still loads).

    The one place a manifest's warnings are gathered: a new kind of warning is added here.
    """
    return [
        Problem(f"manifest field {w.field!r} {w.message}", field=w.field)
        for w in [*manifest_warnings(manifest), *findability_warnings(manifest, tools)]
    ]
