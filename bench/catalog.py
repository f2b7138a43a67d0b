"""Build catalogs of installed-looking plugins from the Seal-Tools tool descriptions.

Each plugin is a real module plus a ``.dist-info`` with an ``oracle.plugins`` entry point,
written to a folder the benchmark puts on ``sys.path``; it holds ``tools_per_plugin`` tools
taken from one Seal-Tools field, with typed parameters and docstrings. :func:`plan_catalog`
picks the tools of each plugin, so a catalog for another framework (``llm_catalog.py``)
holds the very same functions.
"""

from __future__ import annotations

import json
import keyword
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

from oracle_core.testing.distributions import write_distribution

SEAL_TOOLS = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "seal-tools" / "tool.jsonl"
)
TYPES = {
    "str": "str",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "list": "list[str]",
    "dict": "dict[str, str]",
}


def load_tools(path: Path = SEAL_TOOLS) -> list[dict[str, Any]]:
    """Every Seal-Tools tool description."""
    with path.open() as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _identifier(name: str) -> str:
    ident = re.sub(r"\W", "_", name).strip("_") or "arg"
    if ident[0].isdigit() or keyword.iskeyword(ident):
        ident = f"p_{ident}"
    return ident


def tool_source(spec: dict[str, Any], name: str, decorator: str | None = None) -> str:
    """The source of the function ``name`` described by ``spec``: typed parameters, a
    docstring with an ``Args:`` section, returning its name; ``decorator`` (default:
    oracle-core's ``@tool(name=...)``) goes above it, ``""`` for none."""
    required = set(spec.get("required") or [])
    params, docs = [], []
    seen: set[str] = set()
    for raw, info in (spec.get("parameters") or {}).items():
        ident = _identifier(raw)
        if ident in seen:
            continue
        seen.add(ident)
        hint = TYPES.get(str(info.get("type", "str")).lower(), "str")
        params.append((ident, hint, raw in required))
        description = str(info.get("description", "")).replace('"', "'").replace("\n", " ")
        docs.append(f"        {ident}: {description}")
    ordered = [p for p in params if p[2]] + [p for p in params if not p[2]]
    signature = ", ".join(
        f"{i}: {h}" if req else f"{i}: {h} | None = None" for i, h, req in ordered
    )
    description = str(spec.get("api_description", name)).replace('"', "'").replace("\n", " ")
    args = "\n    Args:\n" + "\n".join(docs) + "\n" if docs else ""
    if decorator is None:
        decorator = f"@tool(name={name!r})\n"
    return (
        f"{decorator}"
        f"def {name}({signature}) -> str:\n"
        f'    """{description}\n{args}    """\n'
        f"    return {name!r}\n"
    )


class PlannedPlugin(NamedTuple):
    """One plugin of a catalog: its name, Seal-Tools field and tools (name, description)."""

    name: str
    field: str
    tools: list[tuple[str, dict[str, Any]]]


def plan_catalog(plugins: int, tools_per_plugin: int = 4) -> list[PlannedPlugin]:
    """The plugins of a catalog of ``plugins``: ``seal0000``, ``seal0001``, ... each with
    ``tools_per_plugin`` Seal-Tools tools of one field, every tool name unique."""
    by_field: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for spec in load_tools():
        by_field[spec.get("field", "misc")].append(spec)
    pool = [spec for field in sorted(by_field) for spec in by_field[field]]
    planned = []
    used: set[str] = set()
    for index in range(plugins):
        specs = [pool[(index * tools_per_plugin + k) % len(pool)] for k in range(tools_per_plugin)]
        field = str(specs[0].get("field", "general")).split("/")[0]
        tools = []
        for spec in specs:
            tool_name = _identifier(spec["api_name"])
            while tool_name in used:
                tool_name = f"{tool_name}_{index}"
            used.add(tool_name)
            tools.append((tool_name, spec))
        planned.append(PlannedPlugin(f"seal{index:04d}", field, tools))
    return planned


def write_catalog(root: Path, plugins: int, tools_per_plugin: int = 4) -> list[str]:
    """Write ``plugins`` distributions into ``root``; return their plugin names."""
    names = []
    for name, field, tools in plan_catalog(plugins, tools_per_plugin):
        tool_names = [tool_name for tool_name, _ in tools]
        sources = [tool_source(spec, tool_name) for tool_name, spec in tools]
        module = f"oracle_bench_{name}"
        summary = f"{field} tools: " + ", ".join(tool_names)
        code = (
            "from oracle_core import PluginManifest, hookimpl, tool\n\n"
            + "\n\n".join(sources)
            + "\n\n@hookimpl\ndef oracle_manifest():\n"
            + f"    return PluginManifest(name={name!r}, summary={summary[:115]!r}, "
            + f"when_to_use=[{('the user needs ' + field.lower())!r}], tags=[{field.lower()[:30]!r}])\n\n"
            + f"@hookimpl\ndef oracle_tools():\n    return [{', '.join(tool_names)}]\n"
        )
        write_distribution(root, module, code, entry_point=name, version="1.0")
        names.append(name)
    return names
