"""The meta-tools: one module each, and the one list of them everything else reads.

Each meta-tool is a :class:`~oracle_core.capabilities.meta_tools.definition.MetaTool`
defined in a module of its own (name, description, parameters, result and the handler that
answers a call): listing (:mod:`~oracle_core.capabilities.meta_tools.listing`), loading
(:mod:`~oracle_core.capabilities.meta_tools.loading`), search
(:mod:`~oracle_core.capabilities.meta_tools.finding`) and operations
(:mod:`~oracle_core.capabilities.meta_tools.operation`). :data:`META_TOOL_DEFINITIONS`
holds every definition of this package's modules (found, not listed by hand), in the order
of :data:`~oracle_core.plugins.core_tools.META_TOOL_ORDER`, the list of meta-tools: the
names the plugins layer reserves, which lies below this layer. The gate's tool list, the
capability state and telemetry read it. Adding a meta-tool is its module here and its name
in that list; a module whose meta-tool is not listed, or a listed name no module defines,
stops the import naming it.

Their schemas are deliberately tiny (those shown on every call at most 130 tokens together,
o200k) and every result is bounded (at most :data:`RESULT_TOKEN_BUDGET` tokens) whatever
the size of the catalog. What runs them over a run's capabilities is
:mod:`oracle_core.capabilities.state`.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools.definition import MetaTool
from oracle_core.capabilities.meta_tools.finding import (
    MAX_QUERIES,
    MAX_QUERY_CHARS,
    NO_FIT_NOTE,
    SearchOutcome,
    candidate_entry,
    search_queries,
    search_results,
)
from oracle_core.capabilities.meta_tools.listing import UNCATEGORIZED, list_capabilities
from oracle_core.capabilities.meta_tools.loading import (
    MAX_LOAD_NAMES,
    LoadOutcome,
    load_capability,
)
from oracle_core.capabilities.meta_tools.operation import OPERATION
from oracle_core.capabilities.meta_tools.results import RESULT_TOKEN_BUDGET, echo
from oracle_core.plugins.core_tools import (
    GET_OPERATION,
    LIST_CAPABILITIES,
    LOAD_CAPABILITY,
    META_TOOL_ORDER,
    SEARCH_CAPABILITIES,
)

__all__ = [
    "GET_OPERATION",
    "GET_OPERATION_SCHEMA",
    "GET_OPERATION_TOOL",
    "LIST_CAPABILITIES",
    "LOAD_CAPABILITY",
    "MAX_LOAD_NAMES",
    "MAX_QUERIES",
    "MAX_QUERY_CHARS",
    "META_TOOLS",
    "META_TOOL_DEFINITIONS",
    "META_TOOL_SCHEMAS",
    "NO_FIT_NOTE",
    "RESULT_TOKEN_BUDGET",
    "SEARCH_CAPABILITIES",
    "UNCATEGORIZED",
    "LoadOutcome",
    "MetaTool",
    "SearchOutcome",
    "candidate_entry",
    "echo",
    "list_capabilities",
    "load_capability",
    "search_queries",
    "search_results",
]


def _definitions() -> tuple[MetaTool, ...]:
    """The meta-tools this package's modules define, in the order of ``META_TOOL_ORDER``."""
    found: dict[str, tuple[MetaTool, str]] = {}
    for module in pkgutil.iter_modules(__path__):
        loaded = importlib.import_module(f"{__name__}.{module.name}")
        for value in vars(loaded).values():
            if isinstance(value, MetaTool) and value is not found.get(value.name, (None,))[0]:
                if value.name in found:  # two definitions of one name
                    raise ImportError(
                        f"meta-tool {value.name!r} is defined twice: in "
                        f"{found[value.name][1]} and in {loaded.__name__}"
                    )
                found[value.name] = (value, loaded.__name__)
    unlisted = sorted(
        f"{name} ({where})" for name, (_, where) in found.items() if name not in META_TOOL_ORDER
    )
    undefined = [name for name in META_TOOL_ORDER if name not in found]
    if unlisted or undefined:
        raise ImportError(
            "the meta-tools and their list disagree: "
            + "; ".join(
                [f"defined but not in META_TOOL_ORDER: {', '.join(unlisted)}"] * bool(unlisted)
                + [f"listed but defined by no module: {', '.join(undefined)}"] * bool(undefined)
            )
            + " (oracle_core/plugins/core_tools.py lists them)"
        )
    return tuple(found[name][0] for name in META_TOOL_ORDER)


META_TOOL_DEFINITIONS: tuple[MetaTool, ...] = _definitions()
"""Every meta-tool, in the order they are shown.

Those shown on every call (``always``) come first, in a fixed order that is the same for
every thread, so the tool list of a request always starts with the same bytes and a
provider's prompt cache is shared by every thread; loads only append tools after them.
"""

META_TOOLS: tuple[Tool, ...] = tuple(d.tool for d in META_TOOL_DEFINITIONS if d.always)
"""The meta-tools shown on every model call of the catalog surface, as
:class:`~oracle_core.Tool` objects, in the order they are shown."""

META_TOOL_SCHEMAS: tuple[dict[str, Any], ...] = tuple(
    d.schema for d in META_TOOL_DEFINITIONS if d.always
)
"""The meta-tools shown on every call as OpenAI function definitions, sent first."""

GET_OPERATION_TOOL: Tool = OPERATION.tool
"""The operation meta-tool as a :class:`~oracle_core.Tool`."""

GET_OPERATION_SCHEMA: dict[str, Any] = OPERATION.schema
"""The operation meta-tool as an OpenAI function definition."""
