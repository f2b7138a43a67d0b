"""A plugin's own model calls, in the usage ledger and under the budgets, as a run's are.

A plugin reaches the model through the handle it is given (``oracle.model`` in
``oracle_startup``; ``ToolContext.oracle.model`` in a tool; middleware and routes through the
handle a hook gave them). That model is a :class:`MeteredModel`: every call it makes is a
``model`` row of the usage ledger naming the plugin, the run and thread it was made in (``""``
outside a run) and the user (the run's; ``"default"`` outside a run), and spends from the
same budgets as a run's calls. A budget that is spent refuses the call before it is made
with :class:`~oracle_core.errors.BudgetExceededError`, which the plugin sees.

Which run a call is made in: a tool's call knows it from its :class:`~oracle_core.ToolContext`;
middleware's from the run whose model call or tool calls are under way in the same task
(:data:`~oracle_core.run.budgets.IN_RUN`). A call made while its run holds the budget keys
(middleware around the run's own model call) checks the budgets under the run's keys; any
other takes the keys itself, as a run's call does, and lets go once its row is in the
ledger (or it failed). A store without the usage facet records nothing, as for runs.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from oracle_core.run.budgets import IN_RUN, check_budgets, lease_key, take_key
from oracle_core.store.facets import facet_of, need
from oracle_core.store.usage import UsageEntry
from oracle_core.values.messages import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from oracle_core.models.base import Model
    from oracle_core.models.cost import PriceTable
    from oracle_core.settings.budgets import Budgets
    from oracle_core.store.base import Checkpointer
    from oracle_core.values.messages import Usage

OUTSIDE_RUN_USER = "default"
"""The user a plugin's model call made outside any run is put down to (as a run given no
``user_id``)."""


@dataclass(frozen=True)
class CallScope:
    """Who a plugin's model call is put down to.

    Attributes:
        plugin: the plugin making it.
        run_id: the run it is made in (``""``: none).
        thread_id: that run's thread (``""``: none).
        user_id: who the run acts for (outside a run: :data:`OUTSIDE_RUN_USER`).
        holding: the run holds its budget keys now (the call takes none itself).
    """

    plugin: str
    run_id: str = ""
    thread_id: str = ""
    user_id: str = OUTSIDE_RUN_USER
    holding: bool = False


def scope_now(plugin: str) -> CallScope:
    """The scope of a call ``plugin`` makes now: in the run under way in this task, if any."""
    current = IN_RUN.get()
    if current is None or current[0].record.status != "running":
        return CallScope(plugin)
    state, holding = current
    return CallScope(plugin, state.record.id, state.thread_id, state.user_id, holding)


class PluginMeter:
    """Puts plugins' model calls in the ledger and holds them to the budgets.

    Args:
        store: the oracle's store (its usage and leases facets).
        budgets: the oracle's ``[budgets]``.
        prices: the price table (one per oracle, shared by its handles).
        clock: the wall clock of the ledger and the windows.
    """

    def __init__(
        self,
        store: Checkpointer,
        budgets: Budgets,
        prices: PriceTable,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.store = store
        self.budgets = budgets
        self.prices = prices
        self._clock = clock or time.time

    @asynccontextmanager
    async def call(self, scope: CallScope, model: str) -> AsyncIterator[list[Usage]]:
        """Around one model call: check the budgets (waiting for their keys), then put the
        usage appended to the yielded list in the ledger.

        Raises:
            BudgetExceededError: a budget the call would spend from is spent.
            RunLimitError: another run held a budget key longer than a call may wait.
        """
        ledger = facet_of(self.store, "usage")
        got: list[Usage] = []
        if ledger is None:  # records nothing, as for runs; budgets need it (checked at start)
            yield got
            return
        budgets = self.budgets.budgets
        owner = f"plugin-call:{scope.plugin}:{uuid.uuid4().hex}"
        taken: list[str] = []
        leases = need(self.store, "leases", "[budgets] in oracle.toml") if budgets else None
        try:
            if budgets:
                if any(b.measure == "cost" for b in budgets) and not self.prices.loaded:
                    prices = self.prices
                    await asyncio.to_thread(lambda: prices.entries)
                thread = scope.thread_id or None
                if not scope.holding:
                    scopes = {b.scope for b in budgets}
                    keys = [("user", scope.user_id)] if "user" in scopes else []
                    if "thread" in scopes and thread is not None:
                        keys.append(("thread", thread))
                    for kind, key in sorted(keys):
                        lease = lease_key(kind, key)
                        await take_key(
                            leases, lease, owner, self.budgets.hold, 2 * self.budgets.hold
                        )
                        taken.append(lease)
                await check_budgets(ledger, self.budgets, self._clock(), scope.user_id, thread)
            yield got
            if got:
                if model and not self.prices.loaded:  # a large JSON file, read once, off the loop
                    prices = self.prices
                    await asyncio.to_thread(lambda: prices.entries)
                await ledger.record_usage([self._entry(scope, model, got[-1])])
        finally:
            for lease in taken:
                assert leases is not None
                await asyncio.shield(leases.release(lease, owner))

    def _entry(self, scope: CallScope, model: str, usage: Usage) -> UsageEntry:
        return UsageEntry(
            at=self._clock(),
            kind="model",
            run_id=scope.run_id,
            thread_id=scope.thread_id,
            user_id=scope.user_id,
            model=model,
            plugin=scope.plugin,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost=self.prices.cost(model, usage) if model else None,
        )


class MeteredModel:
    """The model as a plugin gets it: each call in the ledger and under the budgets.

    Args:
        model: the oracle's model.
        meter: the oracle's :class:`PluginMeter`.
        plugin: the plugin it is given to.
        scope: who its calls are put down to (a tool's call); ``None``: the run under way in
            the calling task, if any (:func:`scope_now`).
    """

    def __init__(
        self, model: Model, meter: PluginMeter, plugin: str, scope: CallScope | None = None
    ) -> None:
        self._model = model
        self._meter = meter
        self._plugin = plugin
        self._scope = scope

    @property
    def name(self) -> str:
        """The model's name."""
        return self._model.name

    def _who(self) -> CallScope:
        return self._scope if self._scope is not None else scope_now(self._plugin)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` in one piece (in the ledger, under the budgets).

        Raises:
            BudgetExceededError: a budget this call would spend from is spent.
        """
        async with self._meter.call(self._who(), request.model or self._model.name) as got:
            response = await self._model.complete(request)
            got.append(response.usage)
        return response

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        """Answer ``request`` as text pieces followed by the whole response (in the ledger,
        under the budgets).

        Raises:
            BudgetExceededError: a budget this call would spend from is spent.
        """
        async with self._meter.call(self._who(), request.model or self._model.name) as got:
            async for piece in self._model.stream(request):
                if isinstance(piece, ModelResponse):
                    got.append(piece.usage)
                yield piece

    def __repr__(self) -> str:
        return f"<MeteredModel {self._model.name!r} of plugin {self._plugin!r}>"
