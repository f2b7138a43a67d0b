"""The leases facet of a store: one run at a time on a thread, across processes."""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from oracle_core.values.threads import RunRecord

WAITER_LIVENESS = 2.0
"""Seconds a waiter for a lease counts as still waiting after its last attempt.

Acquirers that keep trying (the run loop tries at least every 0.2 s) hold their place in
the queue; one that gave up loses it this long after its last try.
"""


class LeaseStore(Protocol):
    """Leases keep one run at a time on a thread across processes.

    A run takes the thread's lease with :meth:`acquire`, renews it with each
    :meth:`~oracle_core.store.threads.ThreadStore.append` (``lease=owner``) and gives it back
    with :meth:`release`. Expiry is wall-clock time (``time.time()``) of the process running
    the store's code; a lease whose expiry has passed is free for the next acquirer. A run
    left ``running`` whose thread has no live lease is found by :meth:`mark_interrupted`.
    A lease key need not name a thread (a background operation's worker holds
    :func:`~oracle_core.values.operations.operation_lease`).
    """

    @abstractmethod
    async def acquire(self, thread_id: str, owner: str, ttl: float) -> bool:
        """Take or renew the thread's lease for ``owner``, atomically across processes.

        The lease is taken when the thread has none, when its lease has expired (its expiry
        is at or before now), or when ``owner`` already holds it (a renewal) — and, so that a
        process running turn after turn cannot starve another, only when no other owner
        that is still trying (within :data:`WAITER_LIVENESS`) asked first: a refused
        acquirer keeps its place in the thread's queue by trying again. It then expires
        ``ttl`` seconds from now and later renewals by ``append`` extend it by the same
        ``ttl``. A thread has at most one lease; a thread need not exist to be leased.

        Args:
            thread_id: the thread.
            owner: who runs on it (unique per run, e.g. ``"<host>:<pid>:<run id>"``).
            ttl: seconds the lease lives without a renewal; must be positive.

        Returns:
            ``True`` when ``owner`` now holds the lease, ``False`` when another owner's live
            lease holds the thread (nothing changes then).

        Raises:
            ValueError: when ``ttl`` is not positive.
        """

    @abstractmethod
    async def release(self, thread_id: str, owner: str) -> None:
        """Give up ``owner``'s lease on the thread, so the next acquirer need not wait.

        Releasing a lease ``owner`` does not hold (never taken, already released, or taken
        over by another owner after it expired) does nothing.
        """

    @abstractmethod
    async def mark_interrupted(self, thread_id: str | None = None) -> list[str]:
        """Mark ``interrupted`` every ``running`` run whose thread has no live lease.

        A run is left ``running`` when its process dies mid-run; without a live lease on its
        thread (none, or expired) nothing is working on it any more. Each such run becomes
        :func:`~oracle_core.values.threads.interrupted` (status ``interrupted``, ``updated_at``
        now, its ``error`` when empty saying why); its messages are kept. A run on a thread
        whose lease is live, whoever owns it, is left as it is. A run that never takes a
        lease is found interrupted by the first call, so every process sharing a store with
        callers of this method must take leases.

        Args:
            thread_id: only this thread's runs; every thread's when ``None``.

        Returns:
            The ids of the runs marked, oldest first.
        """

    async def cut_off_runs(self) -> list[RunRecord]:
        """The ``running`` runs whose thread has no live lease, oldest first: cut off.

        The runs :meth:`mark_interrupted` would mark, read without changing them, so that
        a process can resume them (:mod:`oracle_core.run.waits.sweep`). The default (a store
        that cannot tell) finds none.
        """
        return []


def check_ttl(ttl: float) -> None:
    """Raise :class:`ValueError` unless ``ttl`` is a positive number of seconds."""
    if not ttl > 0:
        raise ValueError(f"a lease's ttl must be a positive number of seconds, not {ttl!r}")
