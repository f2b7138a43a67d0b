"""The checkpointer: the store of an oracle, all five facets in one.

A :class:`Checkpointer` is a :class:`~oracle_core.store.threads.ThreadStore`,
:class:`~oracle_core.store.leases.LeaseStore`,
:class:`~oracle_core.store.operations.OperationStore`,
:class:`~oracle_core.store.credentials.CredentialStore` and
:class:`~oracle_core.store.usage.UsageStore` at once, with an event channel.
Callers that need one facet type against its protocol. The stores shipped implement them
all by subclassing :class:`Checkpointer`; a store of another author may keep threads and
offer only some optional facets (:mod:`oracle_core.store.facets`): the oracle then sees it
through :class:`~oracle_core.store.faceted.FacetedStore`.
"""

from __future__ import annotations

from abc import ABC

from oracle_core.store.credentials import CredentialStore
from oracle_core.store.events import EventChannel
from oracle_core.store.leases import WAITER_LIVENESS, LeaseStore
from oracle_core.store.operations import OperationStore
from oracle_core.store.threads import ThreadStore
from oracle_core.store.usage import UsageStore
from oracle_core.values.threads import INTERRUPTED_ERROR

__all__ = ["INTERRUPTED_ERROR", "WAITER_LIVENESS", "Checkpointer"]
# INTERRUPTED_ERROR and WAITER_LIVENESS are named here too because the run loop and its
# waits imported them from this module before the facets had modules of their own.


class Checkpointer(ThreadStore, LeaseStore, OperationStore, CredentialStore, UsageStore, ABC):
    """Stores thread state so a run can stop and resume, in this process or another.

    The five facets, each documented on its protocol: threads (an append-only message log
    per thread, with its loads and runs, every step atomic), leases (one run at a time on a
    thread across processes), operations (the waits of runs and background calls, every
    change a compare-and-set decided by :mod:`oracle_core.values.operations`),
    credentials (sealed values only) and usage (a ledger of model and tool calls, which
    budgets and ``oracle usage`` read). Every string a store saves or loads is valid UTF-8.
    """

    @property
    def events(self) -> EventChannel:
        """Where runs publish their events and followers of a thread receive them.

        The default fans out within this process; a store shared by several processes
        (Postgres) overrides it so followers see the runs of every process.
        """
        channel = self.__dict__.get("_event_channel")
        if channel is None:
            channel = self.__dict__["_event_channel"] = EventChannel()
        return channel

    async def ping(self, within: float = 5.0) -> None:
        """Answer one query, opening the store if it is not open yet: whether it can be used
        now (``oracle serve`` asks before it starts, ``GET /ready`` on every call).

        A store kept in this process's memory always answers (this default); SQLite and
        Postgres ask their database.

        Args:
            within: seconds the answer may take.

        Raises:
            StoreUnavailableError: the store does not answer, naming the setting that points
                at it and the fix (:mod:`oracle_core.store.unavailable`).
        """
        return None

    async def close(self) -> None:
        """Release connections and files. Safe to call twice."""
        return None
