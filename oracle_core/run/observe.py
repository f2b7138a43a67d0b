"""Observers: what sees a run's events as they happen, for traces and metrics.

The run loop hands every event it yields (:mod:`oracle_core.values.events`), in order, to
each observer of :attr:`RunDeps.observers <oracle_core.run.deps.RunDeps.observers>`, with
the run's registry (which plugin a tool is of) and state, whether or not anyone iterates the run's events publicly (a
resume another caller carries on is observed too). Observers watch; they never change a
run: a failing observer is logged once per run and left out of the rest of that run, so
an exporter that breaks cannot break the run it watches.

The observers the oracle uses are built by :mod:`oracle_core.telemetry` (OpenTelemetry
spans, Prometheus metrics); an embedding application passes its own as
``Oracle(observers=[...])``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from oracle_core.plugins.registry import Registry
    from oracle_core.run.state import RunState
    from oracle_core.values.events import Event

log = logging.getLogger("oracle_core.run")


class RunObserver(Protocol):
    """Sees each event of each run, in order (see the module's docs)."""

    def observe(self, registry: Registry, state: RunState, event: Event) -> None:
        """Note ``event`` of the run ``state`` (quick and without waiting: the run waits)."""


class Observers:
    """The observers of one oracle, called in order, each failure contained.

    Args:
        observers: what is told of every run's events.
    """

    def __init__(self, observers: Sequence[RunObserver] = ()) -> None:
        self.members: tuple[RunObserver, ...] = tuple(observers)

    def __bool__(self) -> bool:
        return bool(self.members)

    def observe(self, registry: Registry, state: RunState, event: Event) -> None:
        """Tell each observer of ``event``; one that raises is logged and skipped for the
        rest of the run ``state`` (its ``failed_observers``)."""
        for observer in self.members:
            if id(observer) in state.failed_observers:
                continue
            try:
                observer.observe(registry, state, event)
            except Exception:
                state.failed_observers.add(id(observer))
                log.exception(
                    "observer %s failed on run %s: it is left out of the rest of the run",
                    type(observer).__name__,
                    state.record.id,
                )
