"""The meta-tools as the model is shown them: list, load and search capabilities, and
``get_operation``.

Their schemas are deliberately tiny (the three together at most 130 tokens, o200k) because
they are sent on every model call, and every result is bounded (at most
:data:`RESULT_TOKEN_BUDGET` tokens) whatever the size of the catalog: past the listing
limit ``list_capabilities`` shows categories (:mod:`~oracle_core.capabilities.meta_tools.listing`),
``load_capability`` loads at most :data:`MAX_LOAD_NAMES` (:mod:`~oracle_core.capabilities.meta_tools.loading`)
and ``search_capabilities`` returns at most six candidates a query
(:mod:`~oracle_core.capabilities.meta_tools.finding`). What runs them over a run's capabilities is
:mod:`oracle_core.capabilities.state`.
"""

from __future__ import annotations

from typing import Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools.finding import (
    MAX_QUERIES,
    MAX_QUERY_CHARS,
    NO_FIT_NOTE,
    SearchOutcome,
    candidate_entry,
    search_capabilities,
    search_queries,
    search_results,
)
from oracle_core.capabilities.meta_tools.listing import UNCATEGORIZED, list_capabilities
from oracle_core.capabilities.meta_tools.loading import MAX_LOAD_NAMES, LoadOutcome, load_capability
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
    "META_TOOL_SCHEMAS",
    "NO_FIT_NOTE",
    "RESULT_TOKEN_BUDGET",
    "SEARCH_CAPABILITIES",
    "UNCATEGORIZED",
    "LoadOutcome",
    "SearchOutcome",
    "candidate_entry",
    "echo",
    "list_capabilities",
    "load_capability",
    "search_capabilities",
    "search_queries",
    "search_results",
]


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


# Every parameter carries a description: without one a weak model fills the parameter with
# schema words ("items", "string", "name1"). The words are few because the three schemas
# share a budget of 130 tokens; for the same reason ``list_capabilities`` does not advertise
# ``page``: it still takes one, and every paged result names the call for its next page.
META_TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": LIST_CAPABILITIES,
            "description": "List capabilities.",
            "parameters": {
                "type": "object",
                "properties": {"category": {"type": "string", "description": "Category"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": LOAD_CAPABILITY,
            "description": "Load capabilities.",
            "parameters": {
                "type": "object",
                "properties": {"names": _strings("Capability names")},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": SEARCH_CAPABILITIES,
            "description": "Find capabilities.",
            "parameters": {"type": "object", "properties": {"queries": _strings("Short tasks")}},
        },
    },
)
"""The meta-tools as OpenAI function definitions, sent first on every model call.

The order is fixed (list, load, search) and the same for every thread, so the tool list of
a request always starts with the same bytes and a provider's prompt cache is shared by
every thread; loads only append tools after them.
"""


def _run_by_core(**_: Any) -> Any:
    # Only the schema of these Tool objects is used: the core runs each meta-tool itself,
    # over a run's capability state (oracle_core.capabilities.state).
    raise RuntimeError("meta-tools are run by the oracle's runtime, not called directly")


META_TOOLS: tuple[Tool, ...] = tuple(
    Tool(
        name=s["function"]["name"],
        description=s["function"]["description"],
        parameters=s["function"]["parameters"],
        function=_run_by_core,
    )
    for s in META_TOOL_SCHEMAS
)
"""The meta-tools as :class:`~oracle_core.Tool` objects, in the order they are shown."""

GET_OPERATION_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": GET_OPERATION,
        "description": "Inspect or cancel an operation.",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "Operation id"},
                "cancel": {"type": "boolean", "description": "Cancel it"},
            },
            "required": ["id"],
        },
    },
}
"""``get_operation`` as an OpenAI function definition.

Sent only on threads that have an operation, after the three meta-tools; it costs tokens
there and nowhere else (the three stay within 130 tokens together).
"""

GET_OPERATION_TOOL = Tool(
    name=GET_OPERATION,
    description=GET_OPERATION_SCHEMA["function"]["description"],
    parameters=GET_OPERATION_SCHEMA["function"]["parameters"],
    function=_run_by_core,
)
"""``get_operation`` as a :class:`~oracle_core.Tool`."""
