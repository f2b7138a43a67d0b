"""One run at a time per thread across processes: a lease in the store, renewed while held.

Within one process runs on a thread queue on an :class:`asyncio.Lock`
(:class:`~oracle_core.run.locks.ThreadLocks`); across processes they take the thread's
lease in the store. A run waits its turn for a bounded time, then fails with a clear
"thread busy" error. While it runs, a heartbeat renews the lease; a process that dies
stops renewing, and its lease expires so the next run takes the thread over. A store
without the leases facet (:mod:`oracle_core.store.facets`) takes no lease: runs on a
thread are then kept one at a time in this process only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from types import TracebackType

from oracle_core.errors import ThreadBusyError
from oracle_core.store.facets import facet_of
from oracle_core.store.leases import LeaseStore
from oracle_core.store.threads import ThreadStore

log = logging.getLogger("oracle_core.run")


class ThreadLease:
    """The lease of one thread for one run.

    Args:
        store: the store whose leases facet keeps the lease (none: no lease is taken).
        thread_id: the thread.
        owner: who holds it (the run id).
        ttl: seconds the lease lasts unless renewed; renewed every third of it.
        wait: seconds to wait for a busy thread before giving up.
    """

    def __init__(
        self,
        store: LeaseStore | ThreadStore,
        thread_id: str,
        owner: str,
        *,
        ttl: float,
        wait: float,
    ) -> None:
        self.store = facet_of(store, "leases")
        self.thread_id = thread_id
        self.owner = owner
        self.ttl = ttl
        self.wait = wait
        self._heartbeat: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ThreadLease:
        if self.store is None:
            return self
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait
        pause = 0.01
        while not await self.store.acquire(self.thread_id, self.owner, self.ttl):
            left = deadline - loop.time()
            if left <= 0:
                raise ThreadBusyError(
                    f"thread {self.thread_id!r} is busy: another run (in this or another "
                    f"process) held it for the {self.wait:g} s this run may wait; try again later"
                )
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, 0.2)  # a waiter keeps its place in the queue by trying
        self._heartbeat = asyncio.create_task(self._renew(), name=f"lease {self.thread_id}")
        return self

    async def _renew(self) -> None:
        assert self.store is not None  # started only with a lease taken
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                await self.store.acquire(self.thread_id, self.owner, self.ttl)
            except Exception:  # the next save or renewal tries again
                log.warning("could not renew the lease of thread %r", self.thread_id, exc_info=True)

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
        if self.store is None:
            return
        # Released even when the run was cancelled: the next run must not wait for expiry.
        await asyncio.shield(self.store.release(self.thread_id, self.owner))
