"""The plugin manifest: what a plugin tells the core and the model about itself."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from oracle_core.authoring.connections import Connection

Visibility = Literal["always", "on-demand", "silent"]
"""How a plugin (or a single tool) is shown to the model; see docs/plugin-authors.md."""

VISIBILITIES: tuple[Visibility, ...] = ("always", "on-demand", "silent")

NAME_MAX = 128
"""The longest plugin name. A name is shown to the model, sent in every listing and put in
URLs (``/plugins/<name>/``), so it must stay bounded; real catalogs have names of 60 to 70
characters (slugs of API names), so the bound leaves room over them."""

NAME_PATTERN = re.compile(rf"[a-z][a-z0-9_-]{{0,{NAME_MAX - 1}}}")
"""A valid plugin name, always matched whole: its characters and :data:`NAME_MAX`."""

# Soft limits: exceeding them costs tokens or attention, so they warn instead of failing.
SUMMARY_MAX = 120
TITLE_MAX = 60
GUIDANCE_ITEM_MAX = 120
WHEN_TO_USE_MAX_ITEMS = 5
EXAMPLES_MAX = 5


class Example(BaseModel):
    """One example of a user request and the tool call that serves it.

    ``tool`` must name a tool of the same plugin and ``args`` must be valid for that tool's
    schema; both are checked when the plugin is assembled.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: str = Field(min_length=1, description="What a user might say.")
    tool: str = Field(min_length=1, description="The tool of this plugin that serves it.")
    args: dict[str, Any] = Field(default_factory=dict, description="The arguments of the call.")


class PluginManifest(BaseModel):
    """What a plugin declares about itself, returned by its ``oracle_manifest`` hook.

    Bad shapes raise errors that name the field and the fix; soft length limits only warn
    (see :func:`manifest_warnings`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Unique lowercase name, `[a-z][a-z0-9_-]*`.")
    title: str = Field(default="", description="Human title; defaults to the name.")
    summary: str = Field(description="One line saying what the plugin does (max 120 chars).")
    visibility: Visibility = "on-demand"
    when_to_use: list[str] = Field(
        default_factory=list, validate_default=True, description="When the model should use it."
    )
    when_not_to_use: list[str] = Field(default_factory=list, description="When it should not.")
    examples: list[Example] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list, description="Lowercase search tags.")
    category: str | None = None
    version: str | None = Field(default=None, description="Defaults to the distribution's.")
    depends_on: list[str] = Field(default_factory=list, description="Names of other plugins.")
    approval: bool = Field(
        default=False,
        description="Whether its tools' calls need a person's approval unless a tool says "
        "otherwise with @tool(approval=...) (docs/waits.md).",
    )
    connections: list[Connection] = Field(
        default_factory=list, description="Credentials its tools need (docs/connections.md)."
    )
    config: type[BaseModel] | None = Field(
        default=None,
        exclude=True,  # a Python class: never part of what the model or the cache reads
        description="A pydantic model of the plugin's `[plugins.<name>]` settings: validated "
        "at assembly, handed to its hooks and tools (ToolContext.config) as an instance.",
    )

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        problem = name_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("connections")
    @classmethod
    def _check_connections(cls, value: list[Connection]) -> list[Connection]:
        names = [c.name for c in value]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(
                f"declares connection {repeated[0]!r} more than once: give each connection "
                "one entry with a unique name"
            )
        return value

    @field_validator("summary")
    @classmethod
    def _check_summary(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("summary is empty: write one line saying what the plugin does")
        return value.strip()

    @field_validator("tags")
    @classmethod
    def _check_tags(cls, value: list[str]) -> list[str]:
        bad = [tag for tag in value if tag != tag.lower() or not tag.strip()]
        if bad:
            fixed = [tag.strip().lower() for tag in bad]
            raise ValueError(
                f"tags must be non-empty and lowercase: write {fixed} instead of {bad}"
            )
        return value

    @field_validator("when_to_use")
    @classmethod
    def _check_when_to_use(cls, value: list[str], info: ValidationInfo) -> list[str]:
        visibility = info.data.get("visibility", "on-demand")
        if visibility != "silent" and not [line for line in value if line.strip()]:
            raise ValueError(
                f"is empty for a {visibility!r} plugin: add at least one line telling the model "
                "when to use it (only silent plugins may omit it)"
            )
        return value

    @model_validator(mode="after")
    def _default_title(self) -> PluginManifest:
        if not self.title:
            object.__setattr__(self, "title", self.name)
        return self


def name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a plugin name, as a sentence with the fix; ``None`` if
    nothing is.

    The one rule for every plugin name (a manifest's, an MCP server's). A long name is shown
    by its start only: the sentence stays short whatever the name's length.
    """
    if len(name) > NAME_MAX:
        return (
            f"{shown_name(name)} is {len(name)} characters: keep a plugin name within "
            f"{NAME_MAX} characters"
        )
    if NAME_PATTERN.fullmatch(name):
        return None
    suggestion = re.sub(r"[^a-z0-9_-]", "-", name.strip().lower()).strip("-_") or "my-plugin"
    if not suggestion[0].isalpha():
        suggestion = f"p-{suggestion}"
    return (
        f"{shown_name(name)} is not a valid plugin name: use lowercase letters, digits, '-' "
        f"and '_', starting with a letter (for example {suggestion!r})"
    )


def shown_name(name: str) -> str:
    """``name`` quoted for a message, cut to :data:`NAME_MAX` characters when longer."""
    return repr(name) if len(name) <= NAME_MAX else f"{name[:NAME_MAX]!r}..."


@dataclass(frozen=True)
class ManifestWarning:
    """A soft limit a manifest exceeds: the plugin still loads."""

    plugin: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.plugin}: {self.field}: {self.message}"


def manifest_warnings(manifest: PluginManifest) -> list[ManifestWarning]:
    """Return the soft-limit warnings for ``manifest`` (long texts, too many items)."""
    found: list[ManifestWarning] = []

    def warn(field: str, message: str) -> None:
        found.append(ManifestWarning(manifest.name, field, message))

    if len(manifest.summary) > SUMMARY_MAX:
        warn("summary", f"is {len(manifest.summary)} characters; keep it within {SUMMARY_MAX}")
    if len(manifest.title) > TITLE_MAX:
        warn("title", f"is {len(manifest.title)} characters; keep it within {TITLE_MAX}")
    for field in ("when_to_use", "when_not_to_use"):
        for index, item in enumerate(getattr(manifest, field)):
            if len(item) > GUIDANCE_ITEM_MAX:
                warn(
                    f"{field}[{index}]",
                    f"is {len(item)} characters; keep each line within {GUIDANCE_ITEM_MAX}",
                )
    if len(manifest.when_to_use) > WHEN_TO_USE_MAX_ITEMS:
        warn(
            "when_to_use",
            f"has {len(manifest.when_to_use)} lines; keep the best {WHEN_TO_USE_MAX_ITEMS}",
        )
    if len(manifest.examples) > EXAMPLES_MAX:
        warn("examples", f"has {len(manifest.examples)} examples; keep the best {EXAMPLES_MAX}")
    return found


def describe_validation_error(error: ValidationError) -> list[tuple[str, str]]:
    """Turn a pydantic error into ``(field, message)`` pairs a person can act on."""
    pairs: list[tuple[str, str]] = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "manifest"
        message = str(item["msg"]).removeprefix("Value error, ")
        if item["type"] == "missing":
            message = f"is required: add {field}=... to the PluginManifest"
        elif item["type"] == "extra_forbidden":
            message = (
                "is not a manifest field: remove it (see docs/plugin-authors.md for the fields)"
            )
        pairs.append((field, message))
    return pairs
