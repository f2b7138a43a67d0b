"""What a run needs, as one immutable value the run loop depends on.

Like pydantic-ai's ``GraphAgentDeps``: the :class:`~oracle_core.Oracle` builds a
:class:`RunDeps` once it has assembled and started its plugins, and the run loop
(:mod:`oracle_core.run.loop`) uses nothing else. The loop never sees the oracle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from oracle_core.capabilities.gate import Gate
from oracle_core.capabilities.state import Capabilities
from oracle_core.models.base import Model
from oracle_core.plugins.registry import Registry
from oracle_core.run.chain import MiddlewareChain
from oracle_core.run.executor import ToolExecutor
from oracle_core.run.guards import Guards
from oracle_core.run.locks import ThreadLocks
from oracle_core.run.observe import Observers
from oracle_core.run.opening import OpenOperations
from oracle_core.run.requests import RequestBuilder
from oracle_core.run.threads import ThreadCache
from oracle_core.store.base import Checkpointer
from oracle_core.values.limits import RunLimits


@dataclass(frozen=True)
class RunDeps:
    """Everything the run loop uses.

    Attributes:
        model: answers each step's request.
        store: saves the thread after every step.
        requests: builds each step's request with the gate's tool list.
        executor: runs one tool call.
        gate: what each request shows and which calls may run (the gate of ``requests``).
        capabilities: what every run's capability state shares (the executor's own); a
            run's state (``capabilities.state(loaded)``) resolves and loads its tools.
        middleware: the plugins' middleware, in order.
        limits: steps, concurrency, timeouts, result size.
        locks: one run at a time per thread in this process.
        threads: recent threads' messages, so a turn reads only what is new.
        open_operations: what a new run does with its thread's operations as it opens
            (:func:`oracle_core.run.waits.opening.open_operations`, handed in by the oracle).
        observers: what sees every event of every run (traces, metrics; run/observe.py).
        guards: what may stop a run before it spends more (usage limits, budgets;
            run/guards.py).
    """

    model: Model
    store: Checkpointer
    requests: RequestBuilder
    executor: ToolExecutor
    gate: Gate
    capabilities: Capabilities
    middleware: MiddlewareChain
    limits: RunLimits
    locks: ThreadLocks
    threads: ThreadCache
    open_operations: OpenOperations
    observers: Observers = field(default_factory=Observers)
    guards: Guards = field(default_factory=Guards)

    def __post_init__(self) -> None:
        """Refuse a gate or capabilities other than those the requests and tools use.

        Raises:
            ValueError: ``gate`` is not ``requests.gate`` or ``capabilities`` is not
                ``executor.capabilities`` (a run would show one thing and run another).
        """
        if self.gate is not self.requests.gate:
            raise ValueError("RunDeps.gate must be the gate of its request builder")
        if self.capabilities is not self.executor.capabilities:
            raise ValueError("RunDeps.capabilities must be those of its tool executor")

    @property
    def registry(self) -> Registry:
        """The registry the requests and tools come from."""
        return self.requests.registry
