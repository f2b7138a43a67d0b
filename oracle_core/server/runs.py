"""Runs started over HTTP: one at a time per thread, each driven by its own task.

Two posts to one thread never interleave: while a run is in progress on a thread, another
post to it is refused with 409 (``thread_busy``) naming the run, instead of waiting in a
queue that could hold a connection open for minutes. A run, once started, works to its end
even if the client goes away (its answer is saved in the thread); stopping the server
(:meth:`ThreadRuns.drain`) refuses new runs, gives those in progress a grace period, then
cancels the rest, each saved as ``cancelled``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING

from oracle_core.run.loop import HANDED_OVER
from oracle_core.server.errors import ApiError
from oracle_core.values.events import Event, RunStarted
from oracle_core.values.result import RunResult
from oracle_core.values.run_options import RunOptions

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle


class _End:
    """Marks the end of a run's event queue."""


_END = _End()


class RunHandle:
    """A run in progress: its thread, its id once known, and its events as they come."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.run_id: str | None = None
        self.task: asyncio.Task[None] | None = None
        self.handed_over = False  # the stopping server handed it to another process
        self._queue: asyncio.Queue[Event | BaseException | _End] = asyncio.Queue()
        self._pending: BaseException | _End | None = None

    def put(self, item: Event | BaseException | _End) -> None:
        """Queue an event, the error that ended the run, or the end marker."""
        self._queue.put_nowait(item)

    async def next(self) -> Event | None:
        """The next event, or ``None`` when the run is over.

        Safe to cancel (as ``asyncio.timeout`` does): no event is lost, the run goes on.

        Raises:
            ThreadConflictError: when another writer changed the thread before the run
                started (answered 409 by the server's error table).
        """
        item = self._pending if self._pending is not None else await self._queue.get()
        self._pending = None
        if isinstance(item, _End):
            self._pending = item  # every later call sees the end too
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    def ready(self) -> list[Event]:
        """The events already queued, taken without waiting (the end stays for :meth:`next`)."""
        events: list[Event] = []
        while self._pending is None and not self._queue.empty():
            item = self._queue.get_nowait()
            if isinstance(item, Event):
                events.append(item)
            else:
                self._pending = item
        return events

    async def events(self) -> AsyncIterator[Event]:
        """Every remaining event, in order, ending with ``done``."""
        while (event := await self.next()) is not None:
            yield event

    async def result(self) -> RunResult:
        """Wait for the run to end and return it whole.

        Raises:
            ThreadConflictError: on a conflicting write (answered 409).
            ApiError: 503 when the server stopped the run.
        """
        events = [event async for event in self.events()]
        try:
            return RunResult.from_events(self.thread_id, events)
        except ValueError:
            raise self.cancelled() from None

    def cancelled(self) -> ApiError:
        """The 503 for a run the stopping server did not finish: ``run_handed_over`` when
        another process finishes it (``ORACLE_RESUME_RUNS``, on by default), else
        ``run_cancelled``."""
        if self.handed_over:
            return ApiError(
                503,
                "run_handed_over",
                f"run {self.run_id} on thread {self.thread_id!r} was handed over: the server "
                "is stopping, and the next process that serves this store finishes the run "
                f"from its last step; read the answer from the thread (GET /threads/"
                f"{self.thread_id}) or follow its events (GET /threads/{self.thread_id}/events)",
                {"Retry-After": "5"},
            )
        return ApiError(
            503,
            "run_cancelled",
            f"run {self.run_id} on thread {self.thread_id!r} was cancelled (and saved so): "
            "the server is stopping; post the message again once it is back",
            {"Retry-After": "5"},
        )


class ThreadRuns:
    """Starts runs for the server and keeps at most one in progress per thread.

    Args:
        oracle: the oracle that works the runs.
    """

    def __init__(self, oracle: Oracle) -> None:
        self.oracle = oracle
        self._active: dict[str, RunHandle] = {}
        self._stopping = False

    def active(self, thread_id: str) -> str | None:
        """The id of the run in progress on ``thread_id`` (``""`` while it starts), else None."""
        handle = self._active.get(thread_id)
        if handle is not None:
            return handle.run_id or ""
        return "" if self.oracle.thread_busy(thread_id) else None

    def start(
        self,
        thread_id: str,
        message: str | None,
        *,
        user_id: str = "default",
        text_deltas: bool = True,
        tool_results: Mapping[str, str] | None = None,
        options: RunOptions | None = None,
    ) -> RunHandle:
        """Start a run on ``thread_id`` now, or refuse with 409 if one is in progress there.

        The check and the claim happen without yielding to the event loop, so two posts
        arriving together cannot both pass. Once the server is stopping, every post is
        refused with 503 (``shutting_down``). ``message``, or ``tool_results`` continuing a
        run, and ``options`` are those of :meth:`~oracle_core.Oracle.stream`.
        """
        if self._stopping:
            raise ApiError(
                503,
                "shutting_down",
                "the server is stopping and starts no new runs; post the message again once "
                "it is back",
                {"Retry-After": "5", "Connection": "close"},
            )
        running = self.active(thread_id)
        if running is not None:
            named = f" ({running})" if running else ""
            raise ApiError(
                409,
                "thread_busy",
                f"thread {thread_id!r} already has a run in progress{named}; runs on one thread "
                "never interleave: wait for its done event (or response), then post again",
                {"Retry-After": "1"},
            )
        handle = RunHandle(thread_id)
        self._active[thread_id] = handle
        events = self.oracle.stream(
            thread_id,
            message,
            user_id=user_id,
            text_deltas=text_deltas,
            tool_results=tool_results,
            options=options,
        )
        handle.task = asyncio.create_task(
            self._drive(handle, events), name=f"oracle-run:{thread_id}"
        )
        return handle

    async def _drive(self, handle: RunHandle, events: AsyncIterator[Event]) -> None:
        try:
            async for event in events:
                if isinstance(event, RunStarted):
                    handle.run_id = event.run_id
                handle.put(event)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            handle.put(error)
        finally:
            if self._active.get(handle.thread_id) is handle:
                del self._active[handle.thread_id]
            handle.put(_END)

    async def wait(self, thread_id: str) -> None:
        """Wait until the run in progress on ``thread_id`` (if any) has ended and saved."""
        handle = self._active.get(thread_id)
        if handle is not None and handle.task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.shield(handle.task)

    async def drain(self, grace_seconds: float) -> None:
        """Stop starting runs, give those in progress ``grace_seconds`` to end, then hand the
        rest over (or cancel them, with ``ORACLE_RESUME_RUNS=0``).

        A run handed over is saved as still running and its thread's lease given back, so
        the next process that sweeps the store finishes it from its last step; a cancelled
        run is saved as ``cancelled``. Whoever waits on either gets the 503 of
        :meth:`RunHandle.cancelled` (a stream, its ``error`` event).
        """
        self._stopping = True
        tasks = [h.task for h in self._active.values() if h.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=grace_seconds)
        await self.cancel_all(handover=self.oracle.settings.resume_runs)

    async def cancel_all(self, *, handover: bool = False) -> None:
        """Stop every run still in progress (handing it over, with ``handover``) and wait
        until each has saved its state."""
        handles = [h for h in self._active.values() if h.task is not None]
        for handle in handles:
            handle.handed_over = handover
        tasks = [h.task for h in handles if h.task is not None]
        for task in tasks:
            task.cancel(HANDED_OVER if handover else None)
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
