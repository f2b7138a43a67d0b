"""What a model call costs (and whether it reads images), from litellm's price table as
shipped in its package.

The table is read from ``litellm/model_prices_and_context_window_backup.json`` beside the
installed ``litellm`` package, without importing litellm (which takes a second) and without
any network: litellm's own ``model_cost`` fetches a newer table at import unless
``LITELLM_LOCAL_MODEL_COST_MAP`` is set, and the copy in its package is what a run counts
with, so every process on one install agrees on prices.

A model the table does not know has no price: :meth:`PriceTable.cost` answers ``None``, and
a cost limit or budget cannot hold it (the run limits say so when they start).
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle_core.values.messages import Usage

PRICE_FILE = "model_prices_and_context_window_backup.json"
"""The price table's file name inside the ``litellm`` package."""


@dataclass(frozen=True)
class Price:
    """US dollars per token of one model.

    Attributes:
        model: the model string it is the price of.
        input: per prompt token.
        output: per completion token.
    """

    model: str
    input: float
    output: float

    def cost(self, usage: Usage) -> float:
        """US dollars for ``usage``."""
        return usage.prompt_tokens * self.input + usage.completion_tokens * self.output


def price_file() -> Path | None:
    """The price table shipped with the installed litellm, found without importing it."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / PRICE_FILE
    return path if path.is_file() else None


class PriceTable:
    """Prices by model string, read once from :func:`price_file` (or given, for tests).

    Args:
        entries: the table as litellm writes it (model name to its fields); default read
            from the installed litellm on first use.
    """

    def __init__(self, entries: dict[str, Any] | None = None) -> None:
        self._entries = entries

    @property
    def loaded(self) -> bool:
        """Whether the table has been read (reading it takes tens of milliseconds)."""
        return self._entries is not None

    @property
    def entries(self) -> dict[str, Any]:
        """The table's entries (read on first use; empty when litellm ships none)."""
        if self._entries is None:
            path = price_file()
            try:
                data = json.loads(path.read_text(encoding="utf-8")) if path else {}
            except (OSError, ValueError):
                data = {}
            self._entries = data if isinstance(data, dict) else {}
        return self._entries

    def entry(self, model: str) -> dict[str, Any] | None:
        """The table's entry of ``model``: listed as given, or (``openai/gpt-4o-mini``)
        without its provider, when the entry is that provider's."""
        entries = self.entries
        entry = entries.get(model)
        if isinstance(entry, dict):
            return entry
        provider, slash, rest = model.partition("/")
        entry = entries.get(rest) if slash else None
        if isinstance(entry, dict) and entry.get("litellm_provider") in (provider, None):
            return entry
        return None

    def price(self, model: str) -> Price | None:
        """The price of ``model`` (a litellm model string such as ``openai/gpt-4o-mini``),
        or ``None`` when the table has no per-token price for it."""
        entry = self.entry(model)
        if entry is None:
            return None
        cost_in, cost_out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if isinstance(cost_in, int | float) and isinstance(cost_out, int | float):
            return Price(model, float(cost_in), float(cost_out))
        return None

    def accepts_images(self, model: str) -> bool | None:
        """Whether ``model`` reads images: litellm's ``supports_vision`` for a model the
        table lists (unset there is no, as litellm reads it); ``None`` for a model it does
        not list (a local server's: images are sent, and the server answers for itself)."""
        entry = self.entry(model)
        return None if entry is None else entry.get("supports_vision") is True

    def cost(self, model: str, usage: Usage) -> float | None:
        """US dollars ``usage`` of ``model`` costs; ``None`` for a model without a price."""
        price = self.price(model)
        return None if price is None else price.cost(usage)
