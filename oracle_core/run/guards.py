"""Guards: what may stop a run before it spends more (usage limits, budgets).

The run loop asks its :attr:`RunDeps.guards <oracle_core.run.deps.RunDeps.guards>` at three
points of every step, in order, and each guard may raise an
:class:`~oracle_core.errors.OracleError` (such as a usage limit's) to stop the run there:

1. :meth:`RunGuard.before_model`: before a model call is made;
2. :meth:`RunGuard.after_model`: once its response is in and counted in the run's usage
   (``state.record.usage``), before anything is saved of it;
3. :meth:`RunGuard.before_tools`: before one response's tool calls run (all of them: a
   guard that refuses stops the run before any of them starts).

and tells them :meth:`RunGuard.after_tools` once those calls have their results. A run a
guard stops fails with the guard's error as its ``error``; its thread stays usable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from oracle_core.run.state import RunState
    from oracle_core.values.messages import ToolCall, ToolResult, Usage


class RunGuard(Protocol):
    """One guard of runs (see the module's docs)."""

    async def before_model(self, state: RunState, step: int) -> None:
        """Raise to stop the run before its model call ``step``."""

    async def after_model(self, state: RunState, step: int, usage: Usage) -> None:
        """Note (or refuse) model call ``step``'s ``usage``, already added to the run's."""

    async def before_tools(self, state: RunState, calls: Sequence[ToolCall]) -> None:
        """Raise to stop the run before one response's ``calls`` run."""

    async def after_tools(self, state: RunState, results: Sequence[ToolResult]) -> None:
        """Note one response's tool ``results`` (in call order)."""


class Guards:
    """The guards of one oracle, asked in order at each point.

    Args:
        guards: what is asked before and after every model call and tool batch.
    """

    def __init__(self, guards: Sequence[RunGuard] = ()) -> None:
        self.members: tuple[RunGuard, ...] = tuple(guards)

    async def before_model(self, state: RunState, step: int) -> None:
        """Ask each guard before model call ``step``."""
        for guard in self.members:
            await guard.before_model(state, step)

    async def after_model(self, state: RunState, step: int, usage: Usage) -> None:
        """Tell each guard of model call ``step``'s ``usage``."""
        for guard in self.members:
            await guard.after_model(state, step, usage)

    async def before_tools(self, state: RunState, calls: Sequence[ToolCall]) -> None:
        """Ask each guard before one response's ``calls`` run."""
        for guard in self.members:
            await guard.before_tools(state, calls)

    async def after_tools(self, state: RunState, results: Sequence[ToolResult]) -> None:
        """Tell each guard of one response's tool ``results``."""
        for guard in self.members:
            await guard.after_tools(state, results)
