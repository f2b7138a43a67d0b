"""A deferral record read from the start-up cache, checked before a plugin is built from it.

A deferred plugin is listed, searched and shown from its record alone
(:mod:`oracle_core.plugins.deferred`), so a record edited by hand must not give a plugin a
tier, a tool or a tool name its author never did: each record is held to the shape
:func:`~oracle_core.plugins.deferred.deferral_record` writes (:class:`DeferralRecord`), its
manifest is validated as a plugin's is, and what it says is held to the rules of a
deferrable plugin: an on-demand manifest naming the record, every tool on-demand (or
following the plugin), named as a tool may be named (never like a core meta-tool, never
twice), and needing only connections the manifest declares. Anything else raises
:class:`~oracle_core.plugins.cache_read.CacheFileError`: the plugin is then imported and
checked as it would be without a cache, and its record written anew.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from oracle_core.authoring.manifest import PluginManifest
from oracle_core.plugins.cache_read import CacheFileError
from oracle_core.plugins.core_tools import META_TOOL_NAMES
from oracle_core.plugins.deferred import DEFERRABLE_HOOKS
from oracle_core.plugins.validate.function_schema import FUNCTION_NAME

__all__ = ["DeferralRecord", "check_record"]

_Pair = Annotated[list[str], Field(min_length=2, max_length=2)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ToolOptions(_Record):
    """A deferred tool's options (:class:`~oracle_core.authoring.tools.tool.Tool`'s plain
    fields, as ``deferral_record`` keeps them)."""

    visibility: Literal["on-demand"] | None
    timeout: float | None
    connections: list[str]
    approval: bool | None
    background: bool
    idempotent: bool


class ToolSpec(_Record):
    """One deferred tool: name, description, options, and how its function is called."""

    name: str
    description: str
    options: ToolOptions
    is_async: bool = Field(alias="async")
    context: str | None


class DeferralRecord(_Record):
    """The shape of a deferral record in the start-up cache."""

    name: str
    manifest: str
    tools: list[ToolSpec]
    warnings: list[_Pair]
    hooks: list[str]
    config: str
    version: str | None
    value: str
    files: list[list[Any]]


def check_record(record: Any) -> PluginManifest:
    """The validated manifest of a deferral record that holds (see the module's rules).

    Raises:
        CacheFileError: naming what does not hold.
    """
    try:
        shaped = DeferralRecord.model_validate(record)
        manifest = PluginManifest.model_validate_json(shaped.manifest)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the record"
        raise CacheFileError(f"{where}: {first['msg']}") from None
    if manifest.name != shaped.name:
        raise CacheFileError(f"names {shaped.name!r} but its manifest {manifest.name!r}")
    if manifest.visibility != "on-demand":
        raise CacheFileError(f"its manifest is {manifest.visibility}, not on-demand")
    if not set(shaped.hooks) <= DEFERRABLE_HOOKS:
        raise CacheFileError("it names hooks a deferred plugin does not have")
    declared = {c.name for c in manifest.connections}
    seen: set[str] = set()
    for spec in shaped.tools:
        if not FUNCTION_NAME.fullmatch(spec.name) or spec.name.lower() in META_TOOL_NAMES:
            raise CacheFileError(f"tool {spec.name!r} has a name no plugin's tool may have")
        if spec.name in seen:
            raise CacheFileError(f"tool {spec.name!r} is named twice")
        seen.add(spec.name)
        if not set(spec.options.connections) <= declared:
            raise CacheFileError(f"tool {spec.name!r} needs a connection not declared")
    return manifest
