"""The sweeper: a process looks for runs cut off by the end of theirs, and resumes them.

``oracle serve`` starts one (unless ``ORACLE_RESUME_RUNS=0``): at start, then every half
lease, it asks the store for ``running`` runs whose thread has no live lease
(:meth:`~oracle_core.store.leases.LeaseStore.cut_off_runs`). A run that last saved a step
within the maximum age is resumed in this process (:mod:`~oracle_core.run.waits.cutoff`), a
few at a time; an older one is marked ``interrupted``, as every cut-off run was before. Every
process sharing a store may sweep at once: the thread's lease lets one of them resume a
run, and the others find it taken (or no longer cut off) and leave it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable

from oracle_core.run.deps import RunDeps
from oracle_core.run.waits.cutoff import cut_off_run
from oracle_core.values.threads import RunRecord

log = logging.getLogger("oracle_core.run")

DEFAULT_CONCURRENCY = 4
"""Cut-off runs one process resumes at once."""


class CutOffSweeper:
    """Finds the runs cut off by the end of their process and resumes them here.

    Args:
        deps: gives the deps of this process's runs (starting the oracle if needed).
        interval: seconds between sweeps (``oracle serve``: half the lease's ttl).
        max_age: seconds since its last saved step within which a cut-off run is resumed;
            an older one is marked ``interrupted``.
        concurrency: cut-off runs resumed at once.
        clock: the wall clock run ages are measured by.
    """

    def __init__(
        self,
        deps: Callable[[], Awaitable[RunDeps]],
        *,
        interval: float,
        max_age: float,
        concurrency: int = DEFAULT_CONCURRENCY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not interval > 0 or not max_age > 0 or concurrency < 1:
            raise ValueError(
                "a sweeper needs an interval and a max_age above 0 and a concurrency of at "
                f"least 1, not {interval!r}, {max_age!r}, {concurrency!r}"
            )
        self._deps = deps
        self.interval = interval
        self.max_age = max_age
        self.concurrency = concurrency
        self._clock = clock
        self._slots = asyncio.Semaphore(concurrency)
        self._active: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._resuming: set[asyncio.Task[bool]] = set()

    async def sweep(self) -> list[str]:
        """Look once: resume each cut-off run young enough, mark older ones interrupted.

        Returns:
            The ids of the runs this call resumed (a run another process took is not one).
        """
        deps = await self._deps()
        young = await self._found(deps)
        done = await asyncio.gather(*(self._resume(deps, run) for run in young))
        return [run.id for run, resumed in zip(young, done, strict=True) if resumed]

    async def _found(self, deps: RunDeps) -> list[RunRecord]:
        """The cut-off runs to resume now; those too old are marked interrupted."""
        store = deps.store
        now = self._clock()
        young: list[RunRecord] = []
        for run in await store.cut_off_runs():
            if run.id in self._active or deps.locks.busy(run.thread_id):
                continue  # resumed here already, or its thread is busy in this process
            if now - run.updated_at > self.max_age:
                marked = await store.mark_interrupted(run.thread_id)
                if marked:
                    log.info("cut-off runs %s were too old to resume: interrupted", marked)
                continue
            young.append(run)
        return young

    async def _resume(self, deps: RunDeps, record: RunRecord, *, found: bool = False) -> bool:
        """Resume one cut-off run to its end; whether this caller was the one to.

        ``found``: the sweep loop already counted the run as being resumed here.
        """
        async with self._slots:
            if not found and record.id in self._active:
                return False
            self._active.add(record.id)
            try:
                run = cut_off_run(_not_waiting(deps), record)
                async for event in run.events():
                    del event  # its followers get the events through the store's channel
                claimed = bool(getattr(run.first, "claimed", False))
                if claimed:
                    log.info(
                        "resumed cut-off run %s of thread %r: %s",
                        record.id,
                        record.thread_id,
                        run.state.record.status,
                    )
                return claimed
            except Exception:
                log.exception("could not resume cut-off run %s", record.id)
                return False
            finally:
                self._active.discard(record.id)

    def start(self) -> None:
        """Sweep now and then every :attr:`interval` seconds, until :meth:`close`."""
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="cut-off runs")

    async def _loop(self) -> None:
        """Sweep every interval; each run found is resumed in a task of its own."""
        while True:
            try:
                deps = await self._deps()
                for run in await self._found(deps):
                    if run.id not in self._active:
                        self._active.add(run.id)  # until its task starts it
                        task = asyncio.create_task(self._resume(deps, run, found=True))
                        self._resuming.add(task)
                        task.add_done_callback(self._resuming.discard)
            except Exception:  # the store is down: the next sweep tries again
                log.warning("could not sweep for cut-off runs", exc_info=True)
            await asyncio.sleep(self.interval)

    async def close(self) -> None:
        """Stop sweeping; runs being resumed are cancelled (saved as ``cancelled``)."""
        task, self._task = self._task, None
        tasks = [t for t in [task, *self._resuming] if t is not None]
        for each in tasks:
            each.cancel()
        for each in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await each


def _not_waiting(deps: RunDeps) -> RunDeps:
    """``deps`` whose runs do not wait for a busy thread: someone else is on it."""
    limits = dataclasses.replace(deps.limits, busy_wait=0.0)
    return dataclasses.replace(deps, limits=limits)
