"""What the next model call of a thread would get, with token counts per part.

``oracle prompt`` and the server's prompt route show it (through
:meth:`oracle_core.Oracle.prompt_report`); nothing runs and nothing is saved.
"""

from __future__ import annotations

from typing import Any

from oracle_core.capabilities.surface import Surface
from oracle_core.models.base import Model
from oracle_core.run.requests import RequestBuilder
from oracle_core.store.base import Checkpointer
from oracle_core.store.facets import facet_of


async def prompt_report(
    requests: RequestBuilder,
    store: Checkpointer,
    model: Model,
    surface: Surface,
    thread_id: str,
    warnings: list[str],
) -> dict[str, Any]:
    """The report of ``thread_id``'s next request (``warnings``: the oracle's, e.g. Tier-1)."""
    state = await store.load(thread_id)
    request = requests.build(
        thread_id=thread_id,
        run_id="next",
        step=1,
        model=model.name,
        messages=state.messages,
        loaded=state.loaded_plugins,
        operations=bool(
            (operations := facet_of(store, "operations")) is not None
            and await operations.list_operations(thread_id=thread_id, limit=1)
        ),
    )
    return {
        "thread_id": thread_id,
        "model": model.name,
        "surface": surface.describe(),
        "loaded_plugins": state.loaded_plugins,
        "thread_usage": state.usage.as_dict(),
        "system_prompt": request.system_prompt,
        "tools": request.openai_tools(),
        "tokens": {
            **requests.token_split(request),
            "per_tool": {t.name: requests.schema_tokens(t) for t in request.tools},
        },
        "warnings": warnings,
    }
