"""What search reads of a plugin: its fields as text, and what is embedded of it.

Every field a model would read takes part: name, title, summary, ``when_to_use``, the
examples' user text, tags, category, tool names and descriptions, parameter names and
descriptions. Silent tools are left out (they are never shown, so never found).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.plugins.registry import Plugin

PLUGIN_FIELDS = (
    "name",
    "title",
    "summary",
    "when_to_use",
    "examples",
    "tags",
    "category",
    "tool_names",
    "tool_descriptions",
    "parameters",
)
"""The fields of a plugin's lexical document, each counted once (no field weights: on the
tuning sets every field once with ``k1`` about 1.2 ranks better than repeating fields)."""

NAMING_FIELDS = PLUGIN_FIELDS[: PLUGIN_FIELDS.index("tool_names") + 1]
"""The short fields (those of :data:`PLUGIN_FIELDS` up to the tool names) that say what a plugin is for. A query word found only in the long
fields (tool descriptions, parameter texts) is weaker evidence that a plugin fits."""

TOOL_FIELDS = ("tool_name", "tool_description", "parameters")
"""The fields of a tool's lexical document."""


def searchable_tools(plugin: Plugin) -> list[Tool]:
    """The tools of ``plugin`` that search may show: every tool that is not silent."""
    return [t for t in plugin.tools if (t.visibility or plugin.visibility) != "silent"]


def parameter_text(parameters: Mapping[str, Any]) -> str:
    """A tool's parameter names and descriptions as one text."""
    props = parameters.get("properties") or {}
    parts: list[str] = []
    for name, spec in props.items() if isinstance(props, Mapping) else ():
        parts.append(str(name))
        if isinstance(spec, Mapping) and isinstance(spec.get("description"), str):
            parts.append(spec["description"])
    return " ".join(parts)


def words_of_name(name: str) -> str:
    """A plugin or tool name in words (``get_forecast`` → ``get forecast``)."""
    return name.replace("-", " ").replace("_", " ").replace(".", " ")


def plugin_fields(plugin: Plugin) -> dict[str, str]:
    """The texts of one plugin's document, by field (silent tools left out)."""
    m = plugin.manifest
    tools = searchable_tools(plugin)
    return {
        "name": words_of_name(m.name),
        "title": m.title if m.title != m.name else "",
        "summary": m.summary,
        "when_to_use": " ".join(m.when_to_use),
        "examples": " ".join(e.user for e in m.examples),
        "tags": " ".join(m.tags),
        "category": m.category or "",
        "tool_names": " ".join(words_of_name(t.name) for t in tools),
        "tool_descriptions": " ".join(t.description for t in tools),
        "parameters": " ".join(parameter_text(t.parameters) for t in tools),
    }


def tool_fields(tool: Tool) -> dict[str, str]:
    """The texts of one tool's document, by field."""
    return {
        "tool_name": words_of_name(tool.name),
        "tool_description": tool.description,
        "parameters": parameter_text(tool.parameters),
    }


def plugin_sentence(plugin: Plugin) -> str:
    """What the semantic ranker embeds for a plugin as a whole: what it is for."""
    m = plugin.manifest
    parts = [m.title, m.summary, *m.when_to_use, *(e.user for e in m.examples), *m.tags]
    return ". ".join(p for p in parts if p)


def tool_sentence(tool: Tool) -> str:
    """What the semantic ranker embeds for a tool: its name in words and its description."""
    return f"{words_of_name(tool.name)}. {tool.description}"


def short_texts(plugin: Plugin) -> list[tuple[str, str]]:
    """The short fields embedded one by one for max-sim: ``(field, text)``, distinct texts.

    The title and summary, each ``when_to_use`` line and each example's user text: one
    thing each, so a request close to any one of them is close to the plugin.
    """
    m = plugin.manifest
    out: list[tuple[str, str]] = []
    # A summary that repeats a tool's description is embedded with that tool already.
    seen = {t.description.strip().lower() for t in searchable_tools(plugin)}
    pairs = [("title", m.title), ("summary", m.summary)]
    pairs += [("when_to_use", w) for w in m.when_to_use]
    pairs += [("examples", e.user) for e in m.examples]
    for field, text in pairs:
        key = text.strip().lower()
        if key and key not in seen:
            seen.add(key)
            out.append((field, text))
    return out


def embedded_texts(plugin: Plugin, fields: bool) -> list[tuple[str, str]]:
    """Everything embedded of a plugin, in order: ``(where, text)``.

    ``where`` is ``plugin`` for its sentence, ``tool:<name>`` for each tool, and the field
    name for each short field (only with ``fields``).
    """
    out = [("plugin", plugin_sentence(plugin))]
    out += [(f"tool:{t.name}", tool_sentence(t)) for t in searchable_tools(plugin)]
    if fields:
        out += short_texts(plugin)
    return out


def plugin_digest(plugin: Plugin, salt: str = "") -> str:
    """A digest of everything search reads of ``plugin`` (and ``salt``: the embedder's name).

    An upgraded plugin whose manifest or tools changed gets another digest, so only it is
    analysed and embedded again.
    """
    digest = hashlib.sha256(salt.encode())
    digest.update(plugin.manifest.model_dump_json().encode())
    for tool in searchable_tools(plugin):
        digest.update(b"\x03" + json.dumps(tool_fields(tool)).encode())
    return digest.hexdigest()[:24]
