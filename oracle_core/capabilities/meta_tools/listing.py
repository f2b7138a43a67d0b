"""The listing meta-tool: its definition, and its result (every listable plugin, or an
overview by category).

Past the listing limit (``ORACLE_LIST_LIMIT``) or the token budget, the result is an
overview: the categories with their counts, the always and loaded plugins, and a hint to
search; one category is listed a page at a time.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools.definition import MetaTool, RunCapabilities
from oracle_core.capabilities.meta_tools.results import (
    RESULT_TOKEN_BUDGET,
    about,
    dumps,
    error,
    fits,
    short,
)
from oracle_core.plugins.core_tools import LIST_CAPABILITIES, SEARCH_CAPABILITIES
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.values.messages import ToolCall, ToolResult
from oracle_core.values.tokens import count_tokens

UNCATEGORIZED = "uncategorized"
"""The category name under which plugins without a category are listed."""

_TAGS = 5


def _listing(plugin: Plugin, loaded: Sequence[str], category: bool = True) -> dict[str, Any]:
    entry = about(plugin, loaded)
    if category:
        entry["category"] = plugin.manifest.category
    entry["tags"] = plugin.manifest.tags[:_TAGS]
    return entry


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
        return error("page must be a whole number from 1; call list_capabilities() for page 1.")
    category = arguments.get("category")
    listed = registry.listed()
    if category is not None:
        if not isinstance(category, str) or not category.strip():
            return error(
                'category must be a name from list_capabilities(), e.g. {"category": "finance"}.'
            )
        return _category_page(listed, loaded, category.strip(), page, limit)
    if len(listed) <= limit and page == 1:
        text = dumps([_listing(p, loaded) for p in listed])
        if fits(text):
            return text
    return _overview(listed, loaded, page, limit)


def _category_of(plugin: Plugin) -> str:
    return plugin.manifest.category or UNCATEGORIZED


def _pages(items: Sequence[Any], limit: int, budget: int, render: Any) -> list[list[Any]]:
    """Split ``items`` into pages of at most ``limit`` items and ``budget`` tokens each."""
    pages: list[list[Any]] = [[]]
    spent = 0
    for item in items:
        cost = count_tokens(dumps(render(item))) + 1
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
        return error(
            f"unknown category {short(category, 60)!r}{hint}; call list_capabilities() for "
            "the categories."
        )
    budget = RESULT_TOKEN_BUDGET - _FRAME
    pages = _pages(members, limit, budget, lambda p: _listing(p, loaded, category=False))
    if page > len(pages):
        return error(
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
        more = dumps({"category": category, "page": page + 1})
        result["next"] = f"list_capabilities({more}) for the next page"
    return dumps(result)


def _overview(listed: Sequence[Plugin], loaded: Sequence[str], page: int, limit: int) -> str:
    counts = Counter(_category_of(p) for p in listed)
    categories = [
        {"category": c, "count": n} for c, n in sorted(counts.items(), key=lambda i: (-i[1], i[0]))
    ]
    available = [p for p in listed if p.visibility == "always" or p.name in loaded]
    shown: list[dict[str, Any]] = [_listing(p, loaded) for p in available[:20]]
    if count_tokens(dumps(shown)) > RESULT_TOKEN_BUDGET // 2:  # many loaded: names only
        shown = [{"name": p.name, "loaded": True} for p in available[:limit]]
    budget = RESULT_TOKEN_BUDGET - _FRAME - count_tokens(dumps(shown))
    pages = _pages(categories, len(categories) or 1, budget, lambda c: c)
    if page > len(pages):
        return error(f"the category list has {len(pages)} page(s); ask for page 1 to {len(pages)}.")
    result: dict[str, Any] = {
        "plugins": len(listed),
        "categories": pages[page - 1],
        "available": shown,
        "hint": (
            f"{len(listed)} capabilities are more than the listing limit of {limit}: call "
            f'{SEARCH_CAPABILITIES}({{"queries": ["your task"]}}) to find the ones you need, or '
            'list_capabilities({"category": "name"}) to list one category.'
        ),
    }
    if len(available) > len(shown):
        result["available_more"] = len(available) - len(shown)
    if len(pages) > 1:
        result["page"], result["pages"] = page, len(pages)
        if page < len(pages):
            result["next"] = f"list_capabilities({dumps({'page': page + 1})}) for more categories"
    return dumps(result)


@dataclass(frozen=True)
class ListCapabilities:
    """The listing meta-tool over a run's capabilities."""

    state: RunCapabilities

    @property
    def tool(self) -> Tool:
        """The tool as the model is shown it."""
        return LIST.tool

    async def __call__(self, call: ToolCall, arguments: Mapping[str, Any]) -> ToolResult:
        """The listing, as the thread's loads stand now."""
        state = self.state
        content = list_capabilities(
            state.registry, state.loaded, arguments, state.shared.list_limit
        )
        return ToolResult(call.id, call.name, content)


# The words are few because the three schemas shown on every call share a budget of 130
# tokens; for the same reason ``page`` is not advertised: the tool still takes one, and
# every paged result names the call for its next page.
LIST = MetaTool(
    name=LIST_CAPABILITIES,
    description="List capabilities.",
    parameters={
        "type": "object",
        "properties": {"category": {"type": "string", "description": "Category"}},
    },
    handler=ListCapabilities,
)
"""The listing meta-tool."""
