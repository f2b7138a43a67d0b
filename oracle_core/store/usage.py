"""The usage facet of a store: a ledger of every model call and tool call runs made.

One :class:`UsageEntry` per model call (its tokens and cost) and per tool call (its tool,
plugin and outcome), each with the run, thread and user it was made for. Budgets
(:mod:`oracle_core.run.budgets`) read the spent total of a user or thread in a window with
:meth:`UsageStore.spent`; ``oracle usage`` and ``GET /usage`` group the entries with
:func:`summarize`. Times are seconds since the epoch (UTC).
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

GROUPINGS = ("user", "thread", "model", "plugin")
"""What ``oracle usage --by`` may group by."""

CORE_PLUGIN = "(core)"
"""The plugin group of core meta-tools' calls (``load_capability``, ...)."""

Grouping = Literal["user", "thread", "model", "plugin"]


@dataclass(frozen=True)
class UsageEntry:
    """One row of the ledger: a model call or a tool call.

    Attributes:
        at: when it ended (seconds since the epoch).
        kind: ``"model"`` or ``"tool"``.
        run_id: the run that made it (``""``: a plugin's model call made outside any run).
        thread_id: the run's thread (``""`` likewise).
        user_id: who the run acted for (outside a run: ``"default"``).
        model: the model called (a tool call: the run's model).
        tool: the tool called (``""`` for a model call).
        plugin: the tool's plugin, or the plugin that made a model call itself
            (``oracle.model`` of its handle); ``""`` for a run's model call or a core
            meta-tool.
        prompt_tokens: a model call's prompt tokens.
        completion_tokens: a model call's completion tokens.
        cost: a model call's cost in US dollars; ``None`` when the model has no known price.
        is_error: a tool call that failed or was refused.
    """

    at: float
    kind: Literal["model", "tool"]
    run_id: str
    thread_id: str
    user_id: str
    model: str = ""
    tool: str = ""
    plugin: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    is_error: bool = False


@dataclass(frozen=True)
class Spent:
    """What model calls spent in a window (:meth:`UsageStore.spent`).

    Attributes:
        tokens: prompt plus completion tokens.
        cost: US dollars of the priced calls.
        requests: model calls.
        unpriced: model calls whose cost is unknown (not in ``cost``).
    """

    tokens: int = 0
    cost: float = 0.0
    requests: int = 0
    unpriced: int = 0


@dataclass
class UsageGroup:
    """The usage of one user, thread, model or plugin (:func:`summarize`).

    Attributes:
        key: the user id, thread id, model or plugin.
        prompt_tokens: tokens in.
        completion_tokens: tokens out.
        cost: US dollars of the priced model calls.
        unpriced_calls: model calls of unknown cost (so ``cost`` is a lower bound).
        model_calls: model calls.
        tool_calls: tool calls.
        tool_errors: tool calls that failed or were refused.
        runs: distinct runs.
    """

    key: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    unpriced_calls: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    runs: int = 0
    _run_ids: set[str] = field(default_factory=set, repr=False)

    def add(self, entry: UsageEntry) -> None:
        """Count ``entry`` (a model call's tokens and cost, or a tool call) in the group."""
        if entry.run_id:  # a plugin's model call made outside any run has none
            self._run_ids.add(entry.run_id)
            self.runs = len(self._run_ids)
        if entry.kind == "model":
            self.model_calls += 1
            self.prompt_tokens += entry.prompt_tokens
            self.completion_tokens += entry.completion_tokens
            if entry.cost is None:
                self.unpriced_calls += 1
            else:
                self.cost += entry.cost
        else:
            self.tool_calls += 1
            self.tool_errors += int(entry.is_error)

    @property
    def known_cost(self) -> float | None:
        """The cost, or ``None`` when no model call of the group had a known price."""
        if self.unpriced_calls and self.cost == 0.0:
            return None
        return self.cost

    def to_json(self) -> dict[str, object]:
        """The group as JSON-ready values (``cost`` null when unknown)."""
        return {
            "key": self.key,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "cost": self.known_cost,
            "unpriced_calls": self.unpriced_calls,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "runs": self.runs,
        }


class UsageStore(Protocol):
    """Keeps the usage ledger; every process sharing the store sees every row."""

    @abstractmethod
    async def record_usage(self, entries: Sequence[UsageEntry]) -> None:
        """Append ``entries`` to the ledger, all in one transaction."""

    @abstractmethod
    async def usage(
        self, *, user_id: str | None = None, since: float | None = None
    ) -> list[UsageEntry]:
        """The ledger's entries, oldest first; ``user_id`` and ``since`` (inclusive) narrow it."""

    @abstractmethod
    async def usage_summary(
        self, *, by: Grouping, user_id: str | None = None, since: float | None = None
    ) -> tuple[list[UsageGroup], UsageGroup]:
        """The entries :meth:`usage` would give, grouped as :func:`summarize` groups them,
        and their :func:`total`; the store adds them up itself (SQL stores in SQL)."""

    @abstractmethod
    async def spent(
        self, *, since: float, user_id: str | None = None, thread_id: str | None = None
    ) -> Spent:
        """What the model calls of ``user_id`` (or ``thread_id``) spent from ``since`` on."""


def spent_of(entries: Iterable[UsageEntry]) -> Spent:
    """The :class:`Spent` of ``entries`` (their model calls)."""
    tokens = requests = unpriced = 0
    cost = 0.0
    for entry in entries:
        if entry.kind != "model":
            continue
        tokens += entry.prompt_tokens + entry.completion_tokens
        requests += 1
        if entry.cost is None:
            unpriced += 1
        else:
            cost += entry.cost
    return Spent(tokens, cost, requests, unpriced)


def summarize(entries: Iterable[UsageEntry], by: Grouping) -> list[UsageGroup]:
    """The entries grouped by user, thread, model or plugin, biggest token use first.

    Grouped by plugin, a run's model calls fall in no plugin's group (only tool calls and
    a plugin's own model calls do): a run's model call serves every plugin of its request
    at once.
    """
    if by not in GROUPINGS:
        raise ValueError(f"usage cannot be grouped by {by!r}: use one of {', '.join(GROUPINGS)}")
    groups: dict[str, UsageGroup] = {}
    for entry in entries:
        if by == "plugin" and entry.kind == "model" and not entry.plugin:
            continue
        key = {
            "user": entry.user_id,
            "thread": entry.thread_id,
            "model": entry.model,
            "plugin": entry.plugin or CORE_PLUGIN,
        }[by]
        groups.setdefault(key, UsageGroup(key)).add(entry)
    return ordered(groups.values())


def ordered(groups: Iterable[UsageGroup]) -> list[UsageGroup]:
    """``groups`` biggest token use first, then by key."""
    return sorted(groups, key=lambda g: (-(g.prompt_tokens + g.completion_tokens), g.key))


def group_of(key: str, row: Sequence[Any]) -> UsageGroup:
    """A group from the SQL stores' sums, in :data:`SUMS` order."""
    n = [0 if value is None else value for value in row]
    return UsageGroup(
        key, int(n[0]), int(n[1]), float(n[2]), int(n[3]), int(n[4]), int(n[5]), int(n[6]),
        int(n[7]),
    )  # fmt: skip


SUMS = (
    "sum(prompt_tokens), sum(completion_tokens), coalesce(sum(cost), 0), "
    "sum(CASE WHEN kind = 'model' AND cost IS NULL THEN 1 ELSE 0 END), "
    "sum(CASE WHEN kind = 'model' THEN 1 ELSE 0 END), "
    "sum(CASE WHEN kind = 'tool' THEN 1 ELSE 0 END), "
    "sum(CASE WHEN kind = 'tool' AND is_error THEN 1 ELSE 0 END), count(DISTINCT NULLIF(run_id, ''))"
)
"""The SQL of one group's figures, the same in SQLite and Postgres (:func:`group_of`)."""

GROUP_COLUMNS = {
    "user": "user_id",
    "thread": "thread_id",
    "model": "model",
    "plugin": f"CASE WHEN plugin = '' THEN '{CORE_PLUGIN}' ELSE plugin END",
}
"""The SQL of each grouping's key."""

PLUGIN_ROWS = " AND (kind = 'tool' OR plugin <> '')"
"""The SQL condition of the rows grouped by plugin: tool calls and plugins' own model calls
(a run's model call is no plugin's)."""


def total(entries: Iterable[UsageEntry]) -> UsageGroup:
    """Every entry in one group, keyed ``"total"``."""
    group = UsageGroup("total")
    for entry in entries:
        group.add(entry)
    return group


_AGO = re.compile(r"(\d+)\s*([dhm])")
_UNITS = {"d": 86400, "h": 3600, "m": 60}


def parse_since(text: str, now: float) -> float:
    """When ``--since`` / ``?since=`` means, in seconds since the epoch.

    ``7d``, ``12h``, ``30m`` (that long before ``now``); ``today`` or ``month`` (the UTC
    calendar day or month holding ``now``); or an ISO date or time (``2026-03-01``,
    ``2026-03-01T12:00``, UTC unless it names its offset).

    Raises:
        ValueError: for anything else, naming the forms accepted.
    """
    text = text.strip()
    if match := _AGO.fullmatch(text):
        return now - int(match.group(1)) * _UNITS[match.group(2)]
    moment = datetime.fromtimestamp(now, UTC)
    if text in ("today", "month"):
        start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
        return (start if text == "today" else start.replace(day=1)).timestamp()
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"since {text[:40]!r} is not a time: give 7d, 12h or 30m (ago), today or month "
            "(UTC), or an ISO date or time such as 2026-03-01 or 2026-03-01T12:00"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


async def usage_report(
    store: UsageStore,
    *,
    by: Grouping = "user",
    user_id: str | None = None,
    since: float | None = None,
) -> dict[str, object]:
    """The usage ``oracle usage --json`` prints and ``GET /usage`` answers.

    ``{"by", "user", "since", "groups": [group, ...], "total": group}``, each group as
    :meth:`UsageGroup.to_json` (``cost`` null when no call of it had a known price).
    """
    if by not in GROUPINGS:
        raise ValueError(f"usage cannot be grouped by {by!r}: use one of {', '.join(GROUPINGS)}")
    groups, overall = await store.usage_summary(by=by, user_id=user_id, since=since)
    return {
        "by": by,
        "user": user_id,
        "since": None if since is None else datetime.fromtimestamp(since, UTC).isoformat(),
        "groups": [g.to_json() for g in groups],
        "total": overall.to_json(),
    }
