"""Warnings for manifests that search will find badly: pure functions, no side effects.

Capability search ranks plugins by the words and the meaning of what they say they are for
(:mod:`oracle_core.capabilities.search`). A plugin whose tool names say nothing, which gives
no ``when_to_use`` or examples, or whose summary only repeats its name gives search little
to go on, and requests in users' words will not find it. Each rule returns a
:class:`~oracle_core.authoring.manifest.ManifestWarning` that says what to write instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from oracle_core.authoring.manifest import ManifestWarning, PluginManifest
from oracle_core.authoring.tools.tool import Tool

VAGUE_TOOL_NAMES = frozenset(
    [
        "run",
        "do",
        "execute",
        "exec",
        "call",
        "main",
        "handle",
        "handler",
        "process",
        "invoke",
        "tool",
        "action",
        "act",
        "func",
        "function",
        "go",
        "start",
        "perform",
        "apply",
        "helper",
        "util",
        "utils",
        "test",
        "query",
        "request",
        "op",
        "operation",
        "command",
        "cmd",
        "task",
        "job",
        "work",
    ]
)
"""Tool names that say nothing about what the tool does (compared without ``_`` or ``-``)."""

_WORD = re.compile(r"[a-z0-9]+")
_NOT_WORD = re.compile(r"[^a-z0-9]+")


_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
"""Where a camelCase name's words meet."""


def _words(text: str) -> list[str]:
    return _WORD.findall(_CAMEL.sub(" ", text).lower())


def vague_tool_names(manifest: PluginManifest, tools: Sequence[Tool]) -> list[ManifestWarning]:
    """A warning for each tool whose name is only a generic verb (``run``, ``do``, ...)."""
    out = []
    for tool in tools:
        # Its letters and digits alone (what joining its words gives, without splitting it:
        # this runs for every tool at every start).
        if _NOT_WORD.sub("", tool.name.lower()) in VAGUE_TOOL_NAMES:
            out.append(
                ManifestWarning(
                    manifest.name,
                    f"tools.{tool.name}",
                    f"tool name {tool.name!r} says nothing about what it does; search "
                    "weighs tool names, so name it for its task (e.g. 'convert_currency')",
                )
            )
    return out


def missing_guidance(manifest: PluginManifest) -> list[ManifestWarning]:
    """Warnings for a findable plugin without ``when_to_use`` or without examples."""
    if manifest.visibility == "silent":
        return []  # never searched
    out = []
    if not manifest.when_to_use:
        out.append(
            ManifestWarning(
                manifest.name,
                "when_to_use",
                "is empty; say when to use the plugin in users' words, so search finds it",
            )
        )
    if not manifest.examples:
        out.append(
            ManifestWarning(
                manifest.name,
                "examples",
                "is empty; add an example request in a user's words "
                '(Example(user="...", tool=..., args=...)): search matches requests to it',
            )
        )
    return out


def summary_repeats_name(manifest: PluginManifest) -> list[ManifestWarning]:
    """A warning when the summary says no more than the plugin's name and title."""
    named = set(_words(manifest.name)) | set(_words(manifest.title)) | {"plugin", "the", "a"}
    said = [w for w in _words(manifest.summary) if w not in named]
    if said:
        return []
    return [
        ManifestWarning(
            manifest.name,
            "summary",
            "only repeats the plugin's name; say what it does in a user's words "
            "(search matches requests to it)",
        )
    ]


def findability_warnings(manifest: PluginManifest, tools: Sequence[Tool]) -> list[ManifestWarning]:
    """The warnings the plugin validator adds (shown by ``oracle plugins``, failing
    ``check_plugin``): the defects, tool names that say nothing."""
    return vague_tool_names(manifest, tools)


def findability_advice(manifest: PluginManifest, tools: Sequence[Tool]) -> list[ManifestWarning]:
    """Every findability rule's warning, defects and advice alike, in a fixed order.

    The advice (no examples, a summary that repeats the name) is shown by the findability
    check (:func:`oracle_core.testing.findability.assert_findable`) and ``oracle search
    --explain``; it is not a validator warning, because warnings fail ``check_plugin`` and
    a plugin without examples is common and still works.
    """
    return [
        *summary_repeats_name(manifest),
        *missing_guidance(manifest),
        *vague_tool_names(manifest, tools),
    ]
