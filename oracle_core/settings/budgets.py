"""The ``[budgets]`` table of ``oracle.toml``: what each user and thread may spend in a UTC
day or month (docs/usage.md). Holding them across processes is
:mod:`oracle_core.run.budgets`'s; this module only reads and checks the table::

    [budgets]
    user_day_tokens = 100000      # <scope>_<window>_<measure> = <limit>
    user_month_cost = 5.0         # US dollars
    thread_day_requests = 200     # model calls
    hold_seconds = 300            # optional
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle_core.errors import ConfigError
from oracle_core.settings.reading import bad_config_value
from oracle_core.settings.unknown import unknown_key

SCOPES = ("user", "thread")
"""Whose spending a budget bounds."""

WINDOWS = ("day", "month")
"""The calendar windows (UTC) a budget is spent over."""

MEASURES = ("tokens", "cost", "requests")
"""What a budget counts: prompt plus completion tokens, US dollars, model calls."""

DEFAULT_HOLD = 300.0
"""Seconds a budget key's lease lasts unless let go (longer than any model call)."""

HOLD_KEY = "hold_seconds"
"""The one key of ``[budgets]`` that is not a budget."""

BUDGET_NAMES = tuple(f"{s}_{w}_{m}" for s in SCOPES for w in WINDOWS for m in MEASURES)
"""Every budget key ``[budgets]`` takes (``user_day_tokens``, ...)."""

_FORM = (
    "write <scope>_<window>_<measure> = <limit> with scope user or thread, window day or "
    "month, measure tokens, cost or requests (user_day_tokens = 100000), or hold_seconds"
)


@dataclass(frozen=True)
class Budget:
    """One budget: a limit on what a user or thread spends in a window.

    Attributes:
        scope: ``"user"`` or ``"thread"``.
        window: ``"day"`` or ``"month"`` (UTC).
        measure: ``"tokens"``, ``"cost"`` or ``"requests"``.
        limit: the most that may be spent in the window.
    """

    scope: str
    window: str
    measure: str
    limit: float

    @property
    def name(self) -> str:
        """Its key in ``[budgets]`` (``user_day_tokens``)."""
        return f"{self.scope}_{self.window}_{self.measure}"


@dataclass(frozen=True)
class Budgets:
    """Every budget of an oracle, read from ``[budgets]``.

    Attributes:
        budgets: the budgets, in the order written.
        hold: seconds a budget key's lease lasts unless let go (``hold_seconds``).
    """

    budgets: tuple[Budget, ...] = ()
    hold: float = DEFAULT_HOLD

    @classmethod
    def from_config(cls, table: Any, source: str | Path = "oracle.toml") -> Budgets:
        """The budgets of a ``[budgets]`` table.

        Args:
            table: the table as read from the file.
            source: the file, for the messages (read again for the line of a bad key).

        Raises:
            ConfigError: a key that names no scope, window and measure, or a limit that is
                not a number at least 0; one line naming the file, the line, the key and
                the fix.
        """
        path = Path(source)
        if not isinstance(table, Mapping):
            raise bad_config_value(path, "budgets", table, "a table ([budgets])")
        budgets: list[Budget] = []
        hold = DEFAULT_HOLD
        for key, value in table.items():
            if key == HOLD_KEY:
                hold = _number(path, key, value, "a number of seconds above 0", above=0)
                continue
            if key not in BUDGET_NAMES:
                known = (*BUDGET_NAMES, HOLD_KEY)
                expected = "user|thread _ day|month _ tokens|cost|requests"
                raise unknown_key(
                    path, "budgets", key, known, _FORM, kind=ConfigError, expected=expected
                )
            scope, window, measure = str(key).split("_")
            limit = _number(path, key, value, "a number at least 0", above=None)
            budgets.append(Budget(scope, window, measure, limit))
        return cls(tuple(budgets), hold)


def _number(path: Path, key: str, value: Any, expected: str, *, above: float | None) -> float:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if (
        not number
        or not math.isfinite(value)
        or value < 0
        or (above is not None and value <= above)
    ):
        raise bad_config_value(path, f"budgets.{key}", value, expected)
    return float(value)


def read_budgets(path: Path, data: Mapping[str, Any]) -> Budgets:
    """The ``[budgets]`` of ``oracle.toml`` at ``path``, read as ``data``.

    Raises:
        ConfigError: see :meth:`Budgets.from_config`.
    """
    return Budgets.from_config(data.get("budgets", {}), path)
