"""The search meta-tool: its definition, and its result (each query's fitting candidates,
within the budget)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools.definition import MetaTool, RunCapabilities, strings
from oracle_core.capabilities.meta_tools.results import about, dumps, error, fits
from oracle_core.plugins.core_tools import LIST_CAPABILITIES, SEARCH_CAPABILITIES
from oracle_core.values.messages import ToolCall, ToolResult
from oracle_core.values.tool_errors import error_result

if TYPE_CHECKING:
    from oracle_core.capabilities.search import Candidate, CapabilitySearch

log = logging.getLogger("oracle_core.run")

MAX_QUERIES = 4
"""Queries one call of the search meta-tool may send."""

MAX_QUERY_CHARS = 200
"""Characters of a query that are searched (and echoed back); the rest is ignored."""


@dataclass
class SearchOutcome:
    """What a call of the search meta-tool returned.

    Attributes:
        content: the JSON text returned to the model.
        error: ``True`` when the arguments were refused.
    """

    content: str
    error: bool = False


NO_FIT_NOTE = (
    "No capability fits this query. Rephrase it as a short task (e.g. 'convert currency'), "
    f"or call {LIST_CAPABILITIES}() to browse."
)
"""The note a query that nothing fits gets instead of candidates."""


def search_queries(arguments: Any) -> list[str] | str:
    """The queries of a call of the search meta-tool, or the error message for bad arguments."""
    queries = arguments.get("queries") if isinstance(arguments, dict) else None
    if isinstance(queries, str):
        queries = [queries]
    usage = (
        f'{SEARCH_CAPABILITIES} takes {{"queries": ["task", ...]}}: 1 to {MAX_QUERIES} short '
        "task descriptions."
    )
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        return usage
    queries = [q.strip()[:MAX_QUERY_CHARS] for q in queries if q.strip()]
    if not queries:
        return f"{usage} The list was empty."
    if len(queries) > MAX_QUERIES:
        return (
            f"{usage} You sent {len(queries)}, over the limit of {MAX_QUERIES}: send the "
            "first ones now and the rest in another call."
        )
    return queries


def candidate_entry(candidate: Candidate, loaded: Sequence[str]) -> dict[str, Any]:
    """One search candidate as the model sees it: what it is, its tools that matched, and
    whether it fits the query on its own (``strong``) or is only plausibly related (``weak``)."""
    entry = {**about(candidate.plugin, loaded), "tools": list(candidate.tools)}
    entry["match"] = candidate.match
    return entry


def search_results(
    queries: Sequence[str],
    found: Sequence[Sequence[Candidate]],
    loaded: Sequence[str],
    scores: bool = False,
) -> list[dict[str, Any]]:
    """``[{"query": q, "results": [...]}, ...]`` in query order (with a note when empty).

    ``scores`` adds each candidate's ``score`` (for ``oracle search --json``).
    """
    out = []
    for query, candidates in zip(queries, found, strict=True):
        results = []
        for candidate in candidates:
            entry = candidate_entry(candidate, loaded)
            if scores:
                entry["score"] = candidate.score
            results.append(entry)
        item: dict[str, Any] = {"query": query, "results": results}
        if not results:
            item["note"] = NO_FIT_NOTE
        out.append(item)
    return out


def search_capabilities(
    search: CapabilitySearch, loaded: Sequence[str], arguments: Any
) -> SearchOutcome:
    """Answer a call of the search meta-tool: each query's fitting candidates, within the budget.

    The result is cut to :data:`RESULT_TOKEN_BUDGET` tokens by dropping the last matched
    tool names first, then the weakest candidates, never a whole query.
    """
    queries = search_queries(arguments)
    if isinstance(queries, str):
        return SearchOutcome(error(queries + " Nothing was searched."), error=True)
    found = [list(c) for c in search.search(queries)]
    text = dumps(search_results(queries, found, loaded))
    while not fits(text):
        if any(len(c.tools) > 1 for cs in found for c in cs):
            found = [
                [replace(c, tools=c.tools[: max(1, len(c.tools) - 1)]) for c in cs] for cs in found
            ]
        elif any(len(cs) > 1 for cs in found):
            max(found, key=len).pop()
        else:  # one candidate a query cannot exceed the budget; stop rather than loop
            break
        text = dumps(search_results(queries, found, loaded))
    return SearchOutcome(text)


def _failed(call: ToolCall, message: str, error: BaseException) -> ToolResult:
    return error_result(call, message, error)


@dataclass(frozen=True)
class SearchCapabilities:
    """The search meta-tool over a run's capabilities, searched off the event loop."""

    state: RunCapabilities

    @property
    def tool(self) -> Tool:
        """The tool as the model is shown it."""
        return SEARCH.tool

    async def __call__(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """Each query's candidates; a failing search is an error result, never raised."""
        loaded = self.state.loaded
        try:  # off the event loop: the first search builds or loads the index
            found = await asyncio.to_thread(
                lambda: search_capabilities(self.state.shared.search(), loaded, arguments)
            )
        except Exception as error:
            log.exception("%s failed", SEARCH_CAPABILITIES)
            return _failed(call, f"{SEARCH_CAPABILITIES} failed: {error}", error)
        return ToolResult(call.id, call.name, found.content, is_error=found.error)


SEARCH = MetaTool(
    name=SEARCH_CAPABILITIES,
    description="Find capabilities.",
    parameters={"type": "object", "properties": {"queries": strings("Short tasks")}},
    handler=SearchCapabilities,
)
"""The search meta-tool."""
