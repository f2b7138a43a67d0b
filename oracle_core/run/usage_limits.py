"""Usage limits: the guard that stops a run past its requests, tokens, tool calls or cost.

Like pydantic-ai's ``UsageLimits``, each limit is checked where it can first be known, so a
run stops before it spends more than it must:

- ``max_requests`` before each model call (a limit of 0 stops the run before its first);
- ``max_input_tokens``, ``max_output_tokens``, ``max_total_tokens`` and ``max_cost`` after
  each response, once it is counted in the run's usage (the response is not used);
- ``max_tool_calls`` before one response's calls run, counting the whole batch: a response
  whose calls would take the run past the limit runs none of them.

Every figure is the run's, resumed parts included: requests are the run record's steps,
tokens its usage, tool calls the tool results saved since the run's user message. The
limits are the oracle's :class:`~oracle_core.values.limits.RunLimits`, tightened by a run's
own (:attr:`RunOptions.limits <oracle_core.values.run_options.RunOptions.limits>`).

A run past a limit fails with :class:`~oracle_core.errors.UsageLimitExceeded`; its usage so
far is in its record, and the calls it did not run are answered as stopped (the loop saves
that), so the thread goes on with the next message (docs/limits.md).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oracle_core.errors import UsageLimitExceeded
from oracle_core.values.limits import RunLimits

if TYPE_CHECKING:
    from oracle_core.models.cost import PriceTable
    from oracle_core.run.state import RunState
    from oracle_core.values.messages import Message, ToolCall, ToolResult, Usage

log = logging.getLogger("oracle_core.run.usage_limits")

_WARNED = "usage_limits.unpriced"
"""The key of :attr:`RunState.notes` that says the run was warned its model has no price."""


def variable(limit: str) -> str:
    """The environment variable that sets the usage limit ``limit`` (``ORACLE_MAX_COST``)."""
    return f"ORACLE_{limit.upper()}"


def effective(oracle: RunLimits, run: RunLimits | None) -> dict[str, float]:
    """The usage limits a run is held to: the oracle's, each tightened by the run's own."""
    limits = dict(oracle.usage)
    for name, value in (run.usage if run is not None else {}).items():
        limits[name] = min(limits[name], value) if name in limits else value
    return limits


def exceeded(limit: str, value: float, actual: float, used: str) -> UsageLimitExceeded:
    """The error of a run stopped by ``limit`` (``used``: what it did, in words)."""
    allowed = f"${value:,.6g}" if limit == "max_cost" else f"{value:,}"
    return UsageLimitExceeded(
        f"the run stopped: {used}, over its limit of {allowed} ({limit}; raise it with "
        f"{variable(limit)} or RunLimits({limit}=...))",
        limit=limit,
        value=value,
        actual=actual,
    )


def run_tool_calls(messages: Sequence[Message]) -> int:
    """Tool calls the run already had answered: the tool results since its user message."""
    count = 0
    for message in reversed(messages):
        role = message.get("role")
        if role == "user":
            break
        if role == "tool":
            count += 1
    return count


def unpriced_warning(model: str) -> str:
    """The warning that ``model`` has no price, so a cost limit cannot hold its runs."""
    return (
        f"max_cost is set, but litellm's price table has no price for the model {model!r}: "
        "the cost limit cannot hold its runs (they are not stopped for cost); use a model "
        "string the table knows, or limit tokens with max_total_tokens"
    )


class UsageLimits:
    """The guard of the usage limits (see the module's docs); one per oracle.

    Args:
        limits: the oracle's limits (only the usage ones are read).
        prices: the price table for ``max_cost`` (default one read from the installed
            litellm on first need, and only when a cost limit is in effect).
    """

    def __init__(self, limits: RunLimits, prices: PriceTable | None = None) -> None:
        self.limits = limits
        self._prices = prices

    @property
    def prices(self) -> PriceTable:
        """The price table (made on first use: one per oracle, read lazily)."""
        if self._prices is None:
            from oracle_core.models.cost import PriceTable

            self._prices = PriceTable()
        return self._prices

    def check_model(self, model: str | None) -> str | None:
        """The warning for ``model`` when a cost limit is set and it has no price, else None."""
        if model is None or self.limits.max_cost is None:
            return None
        if self.prices.price(model) is not None:
            return None
        return unpriced_warning(model)

    def of(self, state: RunState) -> dict[str, float]:
        """The usage limits ``state``'s run is held to."""
        return effective(self.limits, state.options.limits)

    async def before_model(self, state: RunState, step: int) -> None:
        """Stop the run before a model call past ``max_requests``."""
        limit = self.of(state).get("max_requests")
        if limit is not None and step > limit:
            used = f"it would make model request {step:,}"
            raise exceeded("max_requests", limit, step, used)

    async def after_model(self, state: RunState, step: int, usage: Usage) -> None:
        """Stop the run when its usage, this response's counted, is past a token or cost limit."""
        limits = self.of(state)
        total = state.record.usage
        for name, figure, what in (
            ("max_input_tokens", total.prompt_tokens, "input"),
            ("max_output_tokens", total.completion_tokens, "output"),
            ("max_total_tokens", total.total_tokens, "total"),
        ):
            limit = limits.get(name)
            if limit is not None and figure > limit:
                raise exceeded(name, limit, figure, f"it used {figure:,} {what} tokens")
        limit = limits.get("max_cost")
        if limit is None:
            return
        model = state.record.model or ""
        cost = self.prices.cost(model, total)
        if cost is None:
            if not state.notes.get(_WARNED):
                state.notes[_WARNED] = True
                log.warning("run %s: %s", state.record.id, unpriced_warning(model))
            return
        if cost > limit:
            raise exceeded("max_cost", limit, cost, f"it cost ${cost:,.6g}")

    async def before_tools(self, state: RunState, calls: Sequence[ToolCall]) -> None:
        """Stop the run before a response's calls that would take it past ``max_tool_calls``."""
        limit = self.of(state).get("max_tool_calls")
        if limit is None or not calls:
            return
        actual = run_tool_calls(state.messages) + len(calls)
        if actual > limit:
            used = (
                f"its model asked for {len(calls):,} tool calls at once (none of them ran), "
                f"{actual:,} in the run"
            )
            raise exceeded("max_tool_calls", limit, actual, used)

    async def after_tools(self, state: RunState, results: Sequence[ToolResult]) -> None:
        """Nothing: tool calls are counted from the thread."""
