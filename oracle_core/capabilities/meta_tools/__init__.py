"""The meta-tools: one module each, and the one list of them everything else reads.

Each meta-tool is a :class:`~oracle_core.capabilities.meta_tools.definition.MetaTool`
defined in a module of its own (name, description, parameters, result and the handler that
answers a call): listing (:mod:`~oracle_core.capabilities.meta_tools.listing`), loading
(:mod:`~oracle_core.capabilities.meta_tools.loading`), search
(:mod:`~oracle_core.capabilities.meta_tools.finding`) and operations
(:mod:`~oracle_core.capabilities.meta_tools.operation`). :data:`META_TOOL_DEFINITIONS`
lists them in the order they are shown; the gate's tool list, the capability state, the
reserved names and telemetry read it. Adding a meta-tool is its module and its row here
(and its name among the names the plugins layer reserves,
:data:`~oracle_core.plugins.core_tools.META_TOOL_NAMES`, which lies below this layer;
tests/capabilities/test_meta_tool_definitions.py checks that both agree).

Their schemas are deliberately tiny (those shown on every call at most 130 tokens together,
o200k) and every result is bounded (at most :data:`RESULT_TOKEN_BUDGET` tokens) whatever
the size of the catalog. What runs them over a run's capabilities is
:mod:`oracle_core.capabilities.state`.
"""

from __future__ import annotations

from typing import Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools.definition import MetaTool
from oracle_core.capabilities.meta_tools.finding import (
    MAX_QUERIES,
    MAX_QUERY_CHARS,
    NO_FIT_NOTE,
    SEARCH,
    SearchOutcome,
    candidate_entry,
    search_queries,
    search_results,
)
from oracle_core.capabilities.meta_tools.listing import LIST, UNCATEGORIZED, list_capabilities
from oracle_core.capabilities.meta_tools.loading import (
    LOAD,
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

META_TOOL_DEFINITIONS: tuple[MetaTool, ...] = (LIST, LOAD, SEARCH, OPERATION)
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
