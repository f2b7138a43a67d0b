"""Budgets per user and per thread over a UTC day or month, held across processes.

The operator writes them in ``oracle.toml`` (docs/usage.md)::

    [budgets]
    user_day_tokens = 100000      # <scope>_<window>_<measure> = <limit>
    user_month_cost = 5.0         # US dollars
    thread_day_requests = 200     # model calls

Scope ``user`` or ``thread``; window ``day`` or ``month``, calendar ones in UTC (a day
starts at 00:00 UTC, a month on its first day at 00:00 UTC); measure ``tokens`` (prompt
plus completion), ``cost`` (US dollars, litellm's price table) or ``requests`` (model calls).
The table is read and checked with every other setting (:mod:`oracle_core.settings.budgets`).

:class:`BudgetGuard` is a :class:`~oracle_core.run.guards.RunGuard`. It writes every model
call and tool call to the store's usage ledger (:mod:`oracle_core.store.usage`), budgets or
not. With budgets, before each model call it takes the store's lease of every budget key
the run spends from (``user:<id>``, ``thread:<id>``), reads what the key spent in the
window, and stops the run with :class:`~oracle_core.errors.BudgetExceededError` when it is
at or over a budget; otherwise it keeps the leases through the call, and lets go once the
call is in the ledger. So the calls spending from one budget key run one at a time across
every process sharing the store, each check sees every earlier call, and the only call that
can end over a budget is the one that started under it: the total spent stays below the
budget plus one model call. A call that fails keeps its leases until its run is seen to
have ended (the task running it ends, or the next budgeted call in the process finds it
ended), or ``hold_seconds`` at most (a process that dies mid-call).
"""

from __future__ import annotations

import asyncio
import calendar
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from oracle_core.errors import BudgetExceededError, RunLimitError
from oracle_core.settings.budgets import Budget, Budgets
from oracle_core.store.facets import need
from oracle_core.store.usage import Spent, UsageEntry

if TYPE_CHECKING:
    from oracle_core.models.cost import PriceTable
    from oracle_core.run.state import RunState
    from oracle_core.store.base import Checkpointer
    from oracle_core.values.messages import ToolCall, ToolResult, Usage

log = logging.getLogger("oracle_core.run")

__all__ = [
    "IN_RUN",
    "Budget",
    "BudgetGuard",
    "Budgets",
    "budget_guard",
    "check_budgets",
    "lease_key",
    "spent_in",
    "take_key",
    "window_start",
]

IN_RUN: ContextVar[tuple[RunState, bool] | None] = ContextVar("oracle_budget_run", default=None)
"""The run whose model call or tool calls are under way in this context, and whether it
holds its budget keys now (set by :class:`BudgetGuard`; read by run/plugin_calls.py to
name the run a plugin's own model call is made in). A run that ended leaves its value, so
readers check that its status is still ``running``."""
# Budget and Budgets are read and checked with the settings (settings/budgets.py).


def spent_in(budget: Budget, spent: Spent) -> float:
    """What ``spent`` amounts to in ``budget``'s measure."""
    if budget.measure == "tokens":
        return spent.tokens
    if budget.measure == "requests":
        return spent.requests
    return spent.cost


def window_start(window: str, now: float) -> float:
    """When the UTC calendar ``window`` (``day`` or ``month``) holding ``now`` began."""
    moment = datetime.fromtimestamp(now, UTC)
    start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if window == "month":
        start = start.replace(day=1)
    return calendar.timegm(start.timetuple())


def lease_key(scope: str, key: str) -> str:
    """The lease of budget key ``key`` of ``scope`` (``user`` or ``thread``)."""
    # NULs keep it apart from every thread id a person would write.
    return f"\x00budget\x00{scope}\x00{key}"


async def take_key(store: Any, lease: str, owner: str, hold: float, wait: float) -> None:
    """Take budget lease ``lease`` for ``owner``, waiting up to ``wait`` seconds.

    Raises:
        RunLimitError: another run or call held it all that time.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    pause = 0.01
    while not await store.acquire(lease, owner, hold):
        left = deadline - loop.time()
        if left <= 0:
            scope, key = lease.split("\x00")[2:4]
            raise RunLimitError(
                f"the {scope} budget of {key!r} was held by another run (in this or "
                f"another process) for the {wait:g} s a run may wait; try again, "
                "or raise [budgets] hold_seconds if model calls take that long"
            )
        await asyncio.sleep(min(pause, left))
        pause = min(pause * 2, 0.2)  # a waiter keeps its place in the queue by trying


async def check_budgets(
    store: Any, budgets: Budgets, now: float, user_id: str, thread_id: str | None
) -> None:
    """Raise :class:`BudgetExceededError` when ``user_id`` (or ``thread_id``; ``None``: no
    thread, so no thread budget applies) has spent a budget in its window holding ``now``."""
    for budget in budgets.budgets:
        key = user_id if budget.scope == "user" else thread_id
        if key is None:
            continue
        since = window_start(budget.window, now)
        if budget.scope == "user":
            spent = await store.spent(since=since, user_id=key)
        else:
            spent = await store.spent(since=since, thread_id=key)
        figure = spent_in(budget, spent)
        if figure >= budget.limit:
            raise _exceeded(budget, key, figure)


class BudgetGuard:
    """Writes the usage ledger and holds the budgets (see the module's docs).

    Args:
        store: the store of the ledger and the budget keys' leases.
        budgets: the budgets (none: the ledger is written, nothing is held).
        prices: what model calls cost (one table per oracle).
        plugin_of: the plugin of a tool name (``""`` for a core meta-tool), for the ledger.
        clock: the wall clock of the ledger and the windows.
        wait: seconds a run waits for a budget key another run holds before it fails.
    """

    def __init__(
        self,
        store: Checkpointer,
        budgets: Budgets,
        *,
        prices: PriceTable | None = None,
        plugin_of: Callable[[str], str] | None = None,
        clock: Callable[[], float] = time.time,
        wait: float | None = None,
    ) -> None:
        self.store = store
        self.budgets = budgets
        self._prices = prices
        self._plugin_of = plugin_of or (lambda name: "")
        self._clock = clock
        self._wait = 2 * budgets.hold if wait is None else wait
        # lease key -> the run holding it, and the task it runs in (which lets go at its end)
        self._held: dict[str, tuple[RunState, asyncio.Task[Any] | None]] = {}
        self._watched: set[asyncio.Task[Any]] = set()
        self._letting_go: set[asyncio.Task[None]] = set()
        self._unpriced: set[str] = set()  # models already said to have no price

    @property
    def prices(self) -> PriceTable:
        """The price table (read on first use)."""
        if self._prices is None:
            from oracle_core.models.cost import PriceTable

            self._prices = PriceTable()
        return self._prices

    async def _read_prices(self) -> PriceTable:
        """The price table, read off the event loop the first time (a large JSON file)."""
        prices = self.prices
        if not prices.loaded:
            await asyncio.to_thread(lambda: prices.entries)
        return prices

    def _keys(self, state: RunState) -> list[tuple[str, str]]:
        scopes = {b.scope for b in self.budgets.budgets}
        keys = [("user", state.user_id)] if "user" in scopes else []
        if "thread" in scopes:
            keys.append(("thread", state.thread_id))
        return keys

    async def before_model(self, state: RunState, step: int) -> None:
        """Wait for the run's budget keys, then stop the run if a budget is spent."""
        if not self.budgets.budgets:
            IN_RUN.set((state, False))
            return
        await self._let_go_of_ended()
        if any(b.measure == "cost" for b in self.budgets.budgets):
            await self._read_prices()
        self._check_priced(state)
        keys = self._keys(state)
        try:
            for scope, key in sorted(keys):
                await self._take(state, lease_key(scope, key))
            await check_budgets(
                self.store, self.budgets, self._clock(), state.user_id, state.thread_id
            )
        except BaseException:
            await self._let_go(state)
            raise
        # The run's own middleware and tools make their model calls under these keys
        # (run/plugin_calls.py): while the run holds them, such a call checks but takes none.
        IN_RUN.set((state, bool(keys)))

    async def _note(self, state: RunState, entries: list[UsageEntry]) -> None:
        """Put ``entries`` in the ledger: at once while a budget is set (its check in
        another process must see them before this run's keys are let go), else with the
        run's next step, in that step's transaction (one write, not two)."""
        if self.budgets.budgets:
            await self.store.record_usage(entries)
        else:
            state.pending_usage.extend(entries)

    async def after_model(self, state: RunState, step: int, usage: Usage) -> None:
        """Note the call in the ledger, then let go of the run's budget keys."""
        model = state.record.model or ""
        try:
            prices = await self._read_prices()
            entry = UsageEntry(
                at=self._clock(),
                kind="model",
                run_id=state.record.id,
                thread_id=state.thread_id,
                user_id=state.user_id,
                model=model,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cost=prices.cost(model, usage) if model else None,
            )
            await self._note(state, [entry])
        finally:
            IN_RUN.set((state, False))
            await self._let_go(state)

    async def before_tools(self, state: RunState, calls: Sequence[ToolCall]) -> None:
        """Tool calls spend from no budget: nothing to check (a tool's own model calls do,
        run/plugin_calls.py); the run holds no budget key while they run."""
        IN_RUN.set((state, False))

    async def after_tools(self, state: RunState, results: Sequence[ToolResult]) -> None:
        """Note each tool call in the ledger."""
        if not results:
            return
        now = self._clock()
        await self._note(
            state,
            [
                UsageEntry(
                    at=now,
                    kind="tool",
                    run_id=state.record.id,
                    thread_id=state.thread_id,
                    user_id=state.user_id,
                    model=state.record.model or "",
                    tool=result.name,
                    plugin=self._plugin_of(result.name),
                    is_error=result.is_error or result.refused,
                )
                for result in results
            ],
        )

    def _check_priced(self, state: RunState) -> None:
        """Say once per model that a model without a price spends nothing from a cost
        budget (docs/usage.md): its cost is unknown, not zero, and a local model's is nil;
        budgets of tokens or requests still hold it."""
        model = state.record.model or ""
        costed = [b.name for b in self.budgets.budgets if b.measure == "cost"]
        if not costed or model in self._unpriced or self.prices.price(model) is not None:
            return
        self._unpriced.add(model)
        log.warning(
            "model %r has no price in litellm's price table: its calls spend nothing from "
            "the cost budget%s %s (a local model costs nothing); budget tokens or requests "
            "in [budgets] to bound it",
            model,
            "s" if len(costed) > 1 else "",
            ", ".join(costed),
        )

    async def _take(self, state: RunState, lease: str) -> None:
        await take_key(self.store, lease, state.record.id, self.budgets.hold, self._wait)
        task = asyncio.current_task()
        self._held[lease] = (state, task)
        if task is not None and task not in self._watched:
            self._watched.add(task)
            task.add_done_callback(self._task_ended)

    def _task_ended(self, task: asyncio.Task[Any]) -> None:
        """Let go of what runs of ``task`` still hold: their model call failed."""
        self._watched.discard(task)
        states = {id(s): s for s, t in self._held.values() if t is task}
        for state in states.values():
            with contextlib.suppress(RuntimeError):  # the loop is closing: hold_seconds ends it
                letting_go = asyncio.get_running_loop().create_task(self._let_go(state))
                self._letting_go.add(letting_go)
                letting_go.add_done_callback(self._letting_go.discard)

    async def _let_go(self, state: RunState) -> None:
        for lease in [k for k, (s, _) in self._held.items() if s is state]:
            del self._held[lease]
            with contextlib.suppress(Exception):  # it expires after hold_seconds anyway
                await asyncio.shield(self.store.release(lease, state.record.id))

    async def _let_go_of_ended(self) -> None:
        """Let go of the keys of runs whose model call failed (they ended holding them)."""
        for state in {id(s): s for s, _ in self._held.values()}.values():
            if state.record.status != "running":
                await self._let_go(state)


def _exceeded(budget: Budget, key: str, figure: float) -> BudgetExceededError:
    shown = f"${figure:.4f} of ${budget.limit:.4f}" if budget.measure == "cost" else (
        f"{figure:g} of {budget.limit:g} {budget.measure}"
    )  # fmt: skip
    turn = "at 00:00 UTC" if budget.window == "day" else "on the 1st at 00:00 UTC"
    return BudgetExceededError(
        f"budget {budget.name} of {budget.scope} {key!r} is spent: {shown} this "
        f"{budget.window} (UTC); it renews {turn}, or raise [budgets] {budget.name} in "
        "oracle.toml",
        scope=budget.scope,
        key=key,
        window=budget.window,
        measure=budget.measure,
        limit=budget.limit,
        spent=figure,
    )


def budget_guard(
    settings: Any,
    store: Checkpointer,
    *,
    plugin_of: Callable[[str], str] | None = None,
    prices: PriceTable | None = None,
) -> BudgetGuard:
    """The guard of an oracle's ``[budgets]`` (``settings``: its :class:`Settings`;
    ``prices``: the oracle's price table, shared with its usage limits).

    Raises:
        MissingFacetError: budgets are set and the store offers no usage ledger or no
            leases (budgets read the ledger and hold their keys with leases).
    """
    budgets = settings.budgets()
    if budgets.budgets:
        need(store, "usage", "[budgets] in oracle.toml")
        need(store, "leases", "[budgets] in oracle.toml")
    return BudgetGuard(store, budgets, plugin_of=plugin_of, prices=prices)
