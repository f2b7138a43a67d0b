"""An MCP server's tool listing, bounded and checked, and its cache under ``ORACLE_HOME``.

Everything a server says is untrusted: a name, a description or a schema is bounded
here before any of it reaches the registry, the search index or a model. A tool the core
could not offer safely (a name that is not a provider's function name or that reads as a
meta-tool, a schema that is not valid JSON Schema or that OpenAI would refuse, a duplicate)
is left out and reported; the other tools of the server stay.

The oracle must be able to search the catalog before any server runs (servers start
lazily), so the last listing a server gave is kept in
``$ORACLE_HOME/cache/mcp/<name>.json``; only a server with no listing yet (or whose
command or URL changed) is started while the oracle is built, to list its tools.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracle_core.plugins.mcp.config import MCPServer
from oracle_core.plugins.registry import META_TOOL_NAMES
from oracle_core.plugins.validate.function_schema import (
    DESCRIPTION_MAX,
    FUNCTION_NAME,
    function_schema_problems,
)

MAX_TOOLS = 128
"""Tools taken from one server; the rest are left out (and reported)."""

MAX_SCHEMA_BYTES = 32_768
"""The largest input schema taken, as compact JSON."""

MAX_INSTRUCTIONS = 2_000
"""Characters of a server's ``instructions`` kept."""

MAX_REPORTED = 20
"""Problems kept per listing: a hostile server cannot flood the report either."""

_CACHE_VERSION = 1
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True)
class ToolSpec:
    """One tool of a server, as the oracle offers it.

    Attributes:
        name: the name the model calls it by (the server's prefix and its name).
        remote: the name the server knows it by.
        description: what it does (bounded).
        schema: its JSON schema (the server's ``inputSchema``, checked).
    """

    name: str
    remote: str
    description: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class Listing:
    """What a server said about itself: instructions and tools, already bounded.

    Attributes:
        instructions: the server's ``instructions`` (may be empty).
        server: the server's own name and version, as it gave them.
        tools: the tools the oracle offers.
        problems: tools left out, each a sentence saying why.
        raw: the tools as kept in the cache (``name``, ``description``, ``inputSchema``).
    """

    instructions: str = ""
    server: str = ""
    tools: tuple[ToolSpec, ...] = ()
    problems: tuple[str, ...] = ()
    raw: tuple[dict[str, Any], ...] = field(default=(), repr=False)

    def by_name(self) -> dict[str, ToolSpec]:
        """The tools by the name the model calls them."""
        return {t.name: t for t in self.tools}


def build_listing(
    definition: MCPServer,
    tools: Sequence[Mapping[str, Any]],
    *,
    instructions: str | None = None,
    server: str = "",
) -> Listing:
    """Check and bound what ``tools/list`` returned (dicts with ``name``, ``description``,
    ``inputSchema``), for the server ``definition``."""
    prefix = definition.tool_prefix
    problems: list[str] = []
    specs: list[ToolSpec] = []
    raw: list[dict[str, Any]] = []
    seen: set[str] = set()
    if len(tools) > MAX_TOOLS:
        problems.append(
            f"the server lists {len(tools)} tools; only the first {MAX_TOOLS} are offered"
        )
    for item in list(tools)[:MAX_TOOLS]:
        spec, problem = _tool_spec(prefix, item, seen)
        if problem is not None:
            problems.append(problem)
            continue
        assert spec is not None
        seen.add(spec.name)
        specs.append(spec)
        raw.append({"name": spec.remote, "description": spec.description,
                    "inputSchema": spec.schema})  # fmt: skip
    if len(problems) > MAX_REPORTED:
        problems = [*problems[:MAX_REPORTED], f"... and {len(problems) - MAX_REPORTED} more"]
    return Listing(
        instructions=bounded(instructions or "", MAX_INSTRUCTIONS),
        server=bounded(server, 120),
        tools=tuple(specs),
        problems=tuple(problems),
        raw=tuple(raw),
    )


def _tool_spec(
    prefix: str, item: Mapping[str, Any], seen: set[str]
) -> tuple[ToolSpec | None, str | None]:
    """One tool checked, or why it is left out."""
    remote = item.get("name") if isinstance(item, Mapping) else None
    if not isinstance(remote, str) or not remote or len(remote) > 128:
        shown = repr(remote)[:40]
        return None, f"a tool named {shown} is left out: a tool name is 1 to 128 characters"
    shown = json.dumps(remote[:64])
    name = prefix + _UNSAFE.sub("_", remote)
    if not FUNCTION_NAME.match(name):
        return None, (
            f"tool {shown} is left out: {name[:80]!r} is longer than the 64 characters a "
            "provider accepts (set a shorter 'prefix')"
        )
    if name.lower() in META_TOOL_NAMES:
        return None, f"tool {shown} is left out: its name reads as the core meta-tool {name!r}"
    if name in seen:
        return None, f"tool {shown} is left out: another tool of the server is called {name!r}"
    description = item.get("description")
    text = description.strip() if isinstance(description, str) else ""
    text = bounded(text, DESCRIPTION_MAX) or f"The tool {remote[:64]} of this MCP server."
    schema = item.get("inputSchema", item.get("input_schema"))
    if isinstance(schema, Mapping) and schema.get("type") == "object":
        schema = dict(schema)
        schema.setdefault("properties", {})
    try:
        size = len(json.dumps(schema, separators=(",", ":"), allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return None, f"tool {shown} is left out: its input schema is not JSON"
    if size > MAX_SCHEMA_BYTES:
        return None, (
            f"tool {shown} is left out: its input schema is {size} bytes, over the limit "
            f"of {MAX_SCHEMA_BYTES}"
        )
    definition = {
        "type": "function",
        "function": {"name": name, "description": text, "parameters": schema},
    }
    try:
        problems = function_schema_problems(definition, meta_schema=True)
    except RecursionError:
        problems = ["the schema is nested too deeply"]
    if problems:
        return None, f"tool {shown} is left out: {problems[0]}"
    assert isinstance(schema, dict)
    return ToolSpec(name, remote, text, schema), None


def bounded(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in an ellipsis when cut."""
    text = text if isinstance(text, str) else ""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def fingerprint(definition: MCPServer) -> str:
    """A digest of what makes a server the same server (never its secrets)."""
    text = json.dumps(
        [definition.command, list(definition.args), definition.cwd, definition.url,
         definition.tool_prefix, sorted(definition.env)],
    )  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class ListingCache:
    """The last listing of each server, one JSON file each under ``folder``.

    Args:
        folder: ``$ORACLE_HOME/cache/mcp``.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, definition: MCPServer) -> Path:
        """The file of ``definition``'s listing."""
        return self.folder / f"{definition.name}.json"

    def load(self, definition: MCPServer) -> Listing | None:
        """The cached listing, or ``None`` when there is none for this command or URL."""
        try:
            data = json.loads(self.path(definition).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("version") != _CACHE_VERSION:
            return None
        if data.get("fingerprint") != fingerprint(definition):
            return None
        tools = data.get("tools")
        if not isinstance(tools, list):
            return None
        return build_listing(
            definition,
            tools,
            instructions=str(data.get("instructions") or ""),
            server=str(data.get("server") or ""),
        )

    def save(self, definition: MCPServer, listing: Listing) -> None:
        """Keep ``listing`` as the server's last (atomically; a failure to write is ignored)."""
        data = {
            "version": _CACHE_VERSION,
            "fingerprint": fingerprint(definition),
            "instructions": listing.instructions,
            "server": listing.server,
            "tools": list(listing.raw),
        }
        path = self.path(definition)
        scratch = path.with_suffix(f".{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            scratch.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            os.replace(scratch, path)
