"""A store that offers some facets seen as a whole :class:`Checkpointer`.

An oracle given a store that is not a :class:`~oracle_core.store.base.Checkpointer` (one
that keeps threads and offers only some of the optional facets, see
:mod:`oracle_core.store.facets`) wraps it in a :class:`FacetedStore`: threads go to the
store, each other facet to the object the store's ``facet(kind)`` answers with, and a facet
it does not offer raises :class:`~oracle_core.store.facets.MissingFacetError` naming the
store, the facet and the call that needed it. The core asks before it uses an optional
facet (:func:`~oracle_core.store.facets.facet_of`), so a plain run never meets that error.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from oracle_core.store.base import Checkpointer
from oracle_core.store.credentials import CredentialStore
from oracle_core.store.events import EventChannel
from oracle_core.store.facets import FacetName, facet_of, need
from oracle_core.store.operations import OperationStore
from oracle_core.store.threads import ThreadStore
from oracle_core.store.usage import Grouping, Spent, UsageEntry, UsageGroup, UsageStore
from oracle_core.values.credentials import CredentialRecord
from oracle_core.values.messages import Message
from oracle_core.values.operations import Operation
from oracle_core.values.threads import RunRecord, ThreadState, ThreadSummary, ThreadTail


def as_checkpointer(store: ThreadStore | Checkpointer) -> Checkpointer:
    """``store`` as a :class:`Checkpointer`: itself when it is one, else wrapped."""
    return store if isinstance(store, Checkpointer) else FacetedStore(store)


class FacetedStore(Checkpointer):
    """A :class:`Checkpointer` over a store that keeps threads and offers some facets.

    Args:
        store: the store; it offers the facets its ``facet(kind)`` answers with.
    """

    def __init__(self, store: ThreadStore) -> None:
        self.store = store

    def facet(self, name: FacetName) -> Any:
        """The wrapped store's answer: the facets it offers, ``None`` for the rest."""
        return facet_of(self.store, name)

    @property
    def events(self) -> EventChannel:
        """The wrapped store's channel when it has one, else one in this process."""
        channel = getattr(self.store, "events", None)
        return channel if isinstance(channel, EventChannel) else super().events

    async def ping(self, within: float = 5.0) -> None:
        """Ask the wrapped store, when it can be asked."""
        ping = getattr(self.store, "ping", None)
        if callable(ping):
            await ping(within)

    async def close(self) -> None:
        """Close the wrapped store, when it can be closed."""
        close = getattr(self.store, "close", None)
        if callable(close):
            await close()

    # -- threads: the wrapped store's own -------------------------------------------------------

    async def load(self, thread_id: str) -> ThreadState:
        """The wrapped store's :meth:`~ThreadStore.load`."""
        return await self.store.load(thread_id)

    async def load_tail(self, thread_id: str, since: int) -> ThreadTail:
        """The wrapped store's :meth:`~ThreadStore.load_tail`."""
        return await self.store.load_tail(thread_id, since)

    async def append(
        self,
        thread_id: str,
        *,
        base: int,
        messages: Sequence[Message] = (),
        loaded: Sequence[str] = (),
        run: RunRecord | None = None,
        lease: str | None = None,
        tokens: Sequence[int] | None = None,
        usage: Sequence[UsageEntry] = (),
    ) -> list[str]:
        """The wrapped store's :meth:`~ThreadStore.append`; usage rows go with the step
        when the store is its own usage ledger, to its ledger after the step when that is
        another object, and nowhere when it keeps none."""
        ledger = facet_of(self.store, "usage")
        own = ledger is not None and id(ledger) == id(self.store)  # the store is its ledger
        together = usage if own else ()
        loaded_now = await self.store.append(
            thread_id, base=base, messages=messages, loaded=loaded, run=run, lease=lease,
            tokens=tokens, usage=together,
        )  # fmt: skip
        if usage and ledger is not None and not own:
            await ledger.record_usage(usage)
        return loaded_now

    async def threads(self) -> list[str]:
        """The wrapped store's :meth:`~ThreadStore.threads`."""
        return await self.store.threads()

    async def thread_summaries(self, *, limit: int | None = None) -> list[ThreadSummary]:
        """The wrapped store's :meth:`~ThreadStore.thread_summaries`."""
        return await self.store.thread_summaries(limit=limit)

    async def delete(self, thread_id: str) -> bool:
        """The wrapped store's :meth:`~ThreadStore.delete`."""
        return await self.store.delete(thread_id)

    # -- leases ----------------------------------------------------------------------------------

    async def acquire(self, thread_id: str, owner: str, ttl: float) -> bool:
        """The leases facet's :meth:`~LeaseStore.acquire`."""
        return await need(self.store, "leases", "a lease").acquire(thread_id, owner, ttl)

    async def release(self, thread_id: str, owner: str) -> None:
        """The leases facet's :meth:`~LeaseStore.release`."""
        await need(self.store, "leases", "a lease").release(thread_id, owner)

    async def mark_interrupted(self, thread_id: str | None = None) -> list[str]:
        """The leases facet's :meth:`~LeaseStore.mark_interrupted`."""
        leases = need(self.store, "leases", "finding interrupted runs")
        return await leases.mark_interrupted(thread_id)

    async def cut_off_runs(self) -> list[RunRecord]:
        """The leases facet's :meth:`~LeaseStore.cut_off_runs`; none without leases."""
        leases = facet_of(self.store, "leases")
        return [] if leases is None else await leases.cut_off_runs()

    # -- operations ------------------------------------------------------------------------------

    def _operations(self) -> OperationStore:
        return need(self.store, "operations", "an operation (approval, connection, background)")

    async def insert_operation(self, operation: Operation) -> None:
        """The operations facet's :meth:`~OperationStore.insert_operation`."""
        await self._operations().insert_operation(operation)

    async def get_operation(self, operation_id: str) -> Operation | None:
        """The operations facet's :meth:`~OperationStore.get_operation`."""
        return await self._operations().get_operation(operation_id)

    async def list_operations(
        self,
        *,
        thread_id: str | None = None,
        status: str | None = None,
        run_id: str | None = None,
        kind: str | None = None,
        limit: int = 1000,
    ) -> list[Operation]:
        """The operations facet's :meth:`~OperationStore.list_operations`."""
        return await self._operations().list_operations(
            thread_id=thread_id, status=status, run_id=run_id, kind=kind, limit=limit
        )

    async def update_operation(
        self,
        operation_id: str,
        *,
        expect: Collection[str],
        status: str,
        reason: str | None = None,
        result: str | None = None,
        error: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> tuple[Operation, bool]:
        """The operations facet's :meth:`~OperationStore.update_operation`."""
        return await self._operations().update_operation(
            operation_id, expect=expect, status=status, reason=reason, result=result,
            error=error, details=details,
        )  # fmt: skip

    async def claim_operation(self, operation_id: str, owner: str) -> Operation | None:
        """The operations facet's :meth:`~OperationStore.claim_operation`."""
        return await self._operations().claim_operation(operation_id, owner)

    async def finish_operation(
        self, operation_id: str, owner: str, outcome: Mapping[str, Any]
    ) -> bool:
        """The operations facet's :meth:`~OperationStore.finish_operation`."""
        return await self._operations().finish_operation(operation_id, owner, outcome)

    # -- credentials -----------------------------------------------------------------------------

    def _credentials(self) -> CredentialStore:
        return need(self.store, "credentials", "a connection's credential")

    async def save_credential(self, plugin: str, name: str, user_id: str, sealed: str) -> None:
        """The credentials facet's :meth:`~CredentialStore.save_credential`."""
        await self._credentials().save_credential(plugin, name, user_id, sealed)

    async def load_credential(
        self, plugin: str, name: str, user_id: str
    ) -> CredentialRecord | None:
        """The credentials facet's :meth:`~CredentialStore.load_credential`."""
        return await self._credentials().load_credential(plugin, name, user_id)

    async def delete_credential(self, plugin: str, name: str, user_id: str) -> bool:
        """The credentials facet's :meth:`~CredentialStore.delete_credential`."""
        return await self._credentials().delete_credential(plugin, name, user_id)

    async def credentials(
        self, *, plugin: str | None = None, user_id: str | None = None
    ) -> list[CredentialRecord]:
        """The credentials facet's :meth:`~CredentialStore.credentials`."""
        return await self._credentials().credentials(plugin=plugin, user_id=user_id)

    # -- usage -----------------------------------------------------------------------------------

    def _usage(self) -> UsageStore:
        return need(self.store, "usage", "the usage ledger (budgets, oracle usage)")

    async def record_usage(self, entries: Sequence[UsageEntry]) -> None:
        """The usage facet's :meth:`~UsageStore.record_usage`."""
        await self._usage().record_usage(entries)

    async def usage(
        self, *, user_id: str | None = None, since: float | None = None
    ) -> list[UsageEntry]:
        """The usage facet's :meth:`~UsageStore.usage`."""
        return await self._usage().usage(user_id=user_id, since=since)

    async def usage_summary(
        self, *, by: Grouping, user_id: str | None = None, since: float | None = None
    ) -> tuple[list[UsageGroup], UsageGroup]:
        """The usage facet's :meth:`~UsageStore.usage_summary`."""
        return await self._usage().usage_summary(by=by, user_id=user_id, since=since)

    async def spent(
        self, *, since: float, user_id: str | None = None, thread_id: str | None = None
    ) -> Spent:
        """The usage facet's :meth:`~UsageStore.spent`."""
        return await self._usage().spent(since=since, user_id=user_id, thread_id=thread_id)
