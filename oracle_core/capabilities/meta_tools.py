"""The three meta-tools the core registers: list, load and search capabilities.

Their schemas are deliberately tiny (together at most 130 tokens, o200k) because they are
sent on every model call, and every result is bounded (at most :data:`RESULT_TOKEN_BUDGET`
tokens) whatever the size of the catalog: past the listing limit ``list_capabilities``
shows categories, and ``search_capabilities`` returns at most six candidates a query.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.values.tokens import count_tokens

if TYPE_CHECKING:
    from oracle_core.capabilities.search import Candidate, CapabilitySearch

LIST_CAPABILITIES = "list_capabilities"
LOAD_CAPABILITY = "load_capability"
SEARCH_CAPABILITIES = "search_capabilities"

MAX_QUERIES = 4
"""Queries one ``search_capabilities`` call may send."""

MAX_LOAD_NAMES = 8
"""Capabilities one ``load_capability`` call may load; more is an error naming the limit."""

MAX_QUERY_CHARS = 200
"""Characters of a query that are searched (and echoed back); the rest is ignored."""

RESULT_TOKEN_BUDGET = 2000
"""Tokens a meta-tool result may cost at most, whatever the size of the catalog."""

UNCATEGORIZED = "uncategorized"
"""The category name under which plugins without a category are listed."""

_SUMMARY_CHARS = 120
_TAGS = 5

_STRING_ARRAY = {"type": "array", "items": {"type": "string"}}

META_TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": LIST_CAPABILITIES,
            "description": "List capabilities.",
            "parameters": {
                "type": "object",
                "properties": {"category": {"type": "string"}, "page": {"type": "integer"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": LOAD_CAPABILITY,
            "description": "Load capabilities to get their tools.",
            "parameters": {"type": "object", "properties": {"names": _STRING_ARRAY}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": SEARCH_CAPABILITIES,
            "description": "Find capabilities for tasks.",
            "parameters": {"type": "object", "properties": {"queries": _STRING_ARRAY}},
        },
    },
)
"""The meta-tools as OpenAI function definitions, sent first on every model call.

The order is fixed (list, load, search) and the same for every thread, so the tool list of
a request always starts with the same bytes and a provider's prompt cache is shared by
every thread; loads only append tools after them.
"""


def _run_by_core(**_: Any) -> Any:
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

GET_OPERATION = "get_operation"
"""The meta-tool that inspects (or cancels) an operation of the thread; see docs/waits.md."""

GET_OPERATION_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": GET_OPERATION,
        "description": "Inspect or cancel an operation.",
        "parameters": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "cancel": {"type": "boolean"}},
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


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _short(text: str, limit: int = _SUMMARY_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _about(plugin: Plugin, loaded: Sequence[str]) -> dict[str, Any]:
    """What every listing of ``plugin`` shows: name, summary, visibility, whether loaded."""
    return {
        "name": plugin.name,
        "summary": _short(plugin.manifest.summary),
        "visibility": plugin.visibility,
        "loaded": plugin.visibility == "always" or plugin.name in loaded,
    }


def _listing(plugin: Plugin, loaded: Sequence[str], category: bool = True) -> dict[str, Any]:
    entry = _about(plugin, loaded)
    if category:
        entry["category"] = plugin.manifest.category
    entry["tags"] = plugin.manifest.tags[:_TAGS]
    return entry


def _fits(text: str) -> bool:
    # A token is at least one byte, so short texts need no counting.
    return len(text.encode()) <= RESULT_TOKEN_BUDGET or count_tokens(text) <= RESULT_TOKEN_BUDGET


def echo(name: str) -> str:
    """A name the model sent, quoted for a message and cut to 64 characters."""
    return repr(name if len(name) <= 64 else f"{name[:64]}...")


def _error(message: str) -> str:
    return _dumps({"error": message})


def list_capabilities(
    registry: Registry,
    loaded: Sequence[str],
    arguments: Any = None,
    limit: int = 40,
) -> str:
    """The ``list_capabilities`` result.

    Without arguments: every non-silent plugin in registration order, while there are at
    most ``limit`` (``ORACLE_LIST_LIMIT``) and they fit the token budget; otherwise an
    overview: the categories with their counts, the always and loaded plugins, and a hint to
    search. ``{"category": c, "page": n}`` lists one category, a page at a time.
    """
    arguments = arguments if isinstance(arguments, dict) else {}
    page = arguments.get("page", 1)
    if page is None:
        page = 1
    if not isinstance(page, int) or isinstance(page, bool) or page < 1:
        return _error("page must be a whole number from 1; call list_capabilities() for page 1.")
    category = arguments.get("category")
    listed = registry.listed()
    if category is not None:
        if not isinstance(category, str) or not category.strip():
            return _error(
                'category must be a name from list_capabilities(), e.g. {"category": "finance"}.'
            )
        return _category_page(listed, loaded, category.strip(), page, limit)
    if len(listed) <= limit and page == 1:
        text = _dumps([_listing(p, loaded) for p in listed])
        if _fits(text):
            return text
    return _overview(listed, loaded, page, limit)


def _category_of(plugin: Plugin) -> str:
    return plugin.manifest.category or UNCATEGORIZED


def _pages(items: Sequence[Any], limit: int, budget: int, render: Any) -> list[list[Any]]:
    """Split ``items`` into pages of at most ``limit`` items and ``budget`` tokens each."""
    pages: list[list[Any]] = [[]]
    spent = 0
    for item in items:
        cost = count_tokens(_dumps(render(item))) + 1
        if pages[-1] and (len(pages[-1]) >= limit or spent + cost > budget):
            pages.append([])
            spent = 0
        pages[-1].append(item)
        spent += cost
    return pages


_FRAME = 300
"""Tokens kept for a page's own keys, hint and next-page pointer."""


def _category_page(
    listed: Sequence[Plugin], loaded: Sequence[str], category: str, page: int, limit: int
) -> str:
    members = [p for p in listed if _category_of(p) == category]
    if not members:
        names = sorted({_category_of(p) for p in listed})
        close = difflib.get_close_matches(category, names, n=3, cutoff=0.5)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        return _error(
            f"unknown category {_short(category, 60)!r}{hint}; call list_capabilities() for "
            "the categories."
        )
    budget = RESULT_TOKEN_BUDGET - _FRAME
    pages = _pages(members, limit, budget, lambda p: _listing(p, loaded, category=False))
    if page > len(pages):
        return _error(
            f"category {category!r} has {len(pages)} page(s); ask for page 1 to {len(pages)}."
        )
    result: dict[str, Any] = {
        "category": category,
        "count": len(members),
        "page": page,
        "pages": len(pages),
        "plugins": [_listing(p, loaded, category=False) for p in pages[page - 1]],
    }
    if page < len(pages):
        more = _dumps({"category": category, "page": page + 1})
        result["next"] = f"list_capabilities({more}) for the next page"
    return _dumps(result)


def _overview(listed: Sequence[Plugin], loaded: Sequence[str], page: int, limit: int) -> str:
    counts = Counter(_category_of(p) for p in listed)
    categories = [
        {"category": c, "count": n} for c, n in sorted(counts.items(), key=lambda i: (-i[1], i[0]))
    ]
    available = [p for p in listed if p.visibility == "always" or p.name in loaded]
    shown: list[dict[str, Any]] = [_listing(p, loaded) for p in available[:20]]
    if count_tokens(_dumps(shown)) > RESULT_TOKEN_BUDGET // 2:  # many loaded: names only
        shown = [{"name": p.name, "loaded": True} for p in available[:limit]]
    budget = RESULT_TOKEN_BUDGET - _FRAME - count_tokens(_dumps(shown))
    pages = _pages(categories, len(categories) or 1, budget, lambda c: c)
    if page > len(pages):
        return _error(
            f"the category list has {len(pages)} page(s); ask for page 1 to {len(pages)}."
        )
    result: dict[str, Any] = {
        "plugins": len(listed),
        "categories": pages[page - 1],
        "available": shown,
        "hint": (
            f"{len(listed)} capabilities are more than the listing limit of {limit}: call "
            'search_capabilities({"queries": ["your task"]}) to find the ones you need, or '
            'list_capabilities({"category": "name"}) to list one category.'
        ),
    }
    if len(available) > len(shown):
        result["available_more"] = len(available) - len(shown)
    if len(pages) > 1:
        result["page"], result["pages"] = page, len(pages)
        if page < len(pages):
            result["next"] = f"list_capabilities({_dumps({'page': page + 1})}) for more categories"
    return _dumps(result)


@dataclass
class LoadOutcome:
    """What a ``load_capability`` call did.

    Attributes:
        content: the JSON text returned to the model.
        loaded: plugins newly added to the thread's ``loaded_plugins``, in request order.
        error: ``True`` when nothing was loaded because a name was bad.
    """

    content: str
    loaded: list[str] = field(default_factory=list)
    error: bool = False


def _entry(plugin: Plugin, already: bool) -> dict[str, Any]:
    return {
        **plugin.manifest.model_dump(mode="json", exclude_none=True),
        "alreadyAvailable": already,
        "tools": [
            {"name": t.name, "description": t.description}
            for t in plugin.tools
            if (t.visibility or plugin.visibility) != "silent"
        ],
    }


def load_capability(registry: Registry, loaded: Sequence[str], arguments: Any) -> LoadOutcome:
    """Check every requested name, then load them all, or none when any is bad.

    Unknown names are reported with the closest real names; silent plugins are internal
    and cannot be loaded. Suggestions come only from listable plugins.
    """
    names = arguments.get("names") if isinstance(arguments, dict) else None
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        return LoadOutcome(
            _error(
                'load_capability takes {"names": ["name", ...]}: a non-empty array of '
                "capability names. Nothing was loaded."
            ),
            error=True,
        )
    names = list(dict.fromkeys(names))
    if len(names) > MAX_LOAD_NAMES:
        return LoadOutcome(
            _error(
                f"load_capability loads at most {MAX_LOAD_NAMES} capabilities at once; you sent "
                f"{len(names)}. Nothing was loaded: load the ones you need first."
            ),
            error=True,
        )
    listed: list[str] | None = None
    problems = []
    for name in names:
        plugin = registry.get(name)
        if plugin is None:
            if listed is None:  # only when a name is wrong: suggestions cost a scan
                listed = [p.name for p in registry.listed()]
            close = difflib.get_close_matches(name[:64], listed, n=3, cutoff=0.5)
            hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
            problems.append(f"unknown capability {echo(name)}{hint}")
        elif plugin.visibility == "silent":
            problems.append(f"{name!r} is internal and cannot be loaded")
    if problems:
        message = (
            "; ".join(problems) + ". Nothing was loaded; call list_capabilities() for the names."
        )
        return LoadOutcome(_error(message), error=True)

    entries = []
    newly: list[str] = []
    for name in names:
        plugin = registry.plugins[name]
        already = plugin.visibility == "always" or name in loaded
        if not already:
            newly.append(name)
        entries.append(_entry(plugin, already))
    content = _dumps(entries)
    if not _fits(content):  # long manifests: keep what the model needs to use the tools
        keep = ("name", "summary", "when_to_use", "alreadyAvailable", "tools")
        content = _dumps([{k: e[k] for k in keep if k in e} for e in entries])
    return LoadOutcome(content, loaded=newly)


@dataclass
class SearchOutcome:
    """What a ``search_capabilities`` call returned.

    Attributes:
        content: the JSON text returned to the model.
        error: ``True`` when the arguments were refused.
    """

    content: str
    error: bool = False


NO_FIT_NOTE = (
    "No capability fits this query. Rephrase it as a short task (e.g. 'convert currency'), "
    "or call list_capabilities() to browse."
)


def search_queries(arguments: Any) -> list[str] | str:
    """The queries of a ``search_capabilities`` call, or the error message for bad arguments."""
    queries = arguments.get("queries") if isinstance(arguments, dict) else None
    if isinstance(queries, str):
        queries = [queries]
    usage = (
        f'search_capabilities takes {{"queries": ["task", ...]}}: 1 to {MAX_QUERIES} short '
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
    """One search candidate as the model sees it."""
    return {**_about(candidate.plugin, loaded), "tools": list(candidate.tools)}


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
    """Run a ``search_capabilities`` call: each query's fitting candidates, within the budget.

    The result is cut to :data:`RESULT_TOKEN_BUDGET` tokens by dropping the last matched
    tool names first, then the weakest candidates, never a whole query.
    """
    queries = search_queries(arguments)
    if isinstance(queries, str):
        return SearchOutcome(_error(queries + " Nothing was searched."), error=True)
    found = [list(c) for c in search.search(queries)]
    text = _dumps(search_results(queries, found, loaded))
    while not _fits(text):
        if any(len(c.tools) > 1 for cs in found for c in cs):
            found = [
                [replace(c, tools=c.tools[: max(1, len(c.tools) - 1)]) for c in cs] for cs in found
            ]
        elif any(len(cs) > 1 for cs in found):
            max(found, key=len).pop()
        else:  # one candidate a query cannot exceed the budget; stop rather than loop
            break
        text = _dumps(search_results(queries, found, loaded))
    return SearchOutcome(text)
