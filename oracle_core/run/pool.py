"""The oracle's own bounded pool of worker threads for sync tools.

Python cannot stop a thread. A sync tool that hangs past its timeout keeps its worker until
it returns, so sync tools get a pool of their own per oracle (never the event loop's default
executor, which litellm, SQLite and everything else share): a hung tool can use up this pool
and no more. When every worker is held by a call that was already abandoned, new calls fail
at once with an error that says so, instead of queueing behind calls that may never end.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

DEFAULT_SYNC_WORKERS = 8
"""Worker threads for sync tools per oracle, unless the operator sets another number."""


class PoolExhaustedError(RuntimeError):
    """Every worker of the sync-tool pool is held by a call that timed out and still runs."""


class SyncToolPool:
    """A bounded thread pool that knows which of its workers hold abandoned calls.

    Args:
        workers: how many sync tool calls may run at once.
    """

    def __init__(self, workers: int = DEFAULT_SYNC_WORKERS) -> None:
        if workers < 1:
            raise ValueError(f"the sync-tool pool needs at least one worker, not {workers}")
        self.workers = workers
        self._executor: ThreadPoolExecutor | None = None
        self._abandoned = 0
        self._lock = threading.Lock()

    @property
    def abandoned(self) -> int:
        """Workers held right now by calls that timed out or were cancelled."""
        return self._abandoned

    async def run(
        self, function: Callable[[], Any], seconds: float, cancel: threading.Event
    ) -> Any:
        """Run ``function`` on a worker within ``seconds``.

        On timeout (or when the awaiting task is cancelled) ``cancel`` is set, so a
        cooperative tool can stop, and the worker counts as abandoned until it returns.

        Raises:
            PoolExhaustedError: every worker holds an abandoned call.
            TimeoutError: the call took longer than ``seconds``.
        """
        with self._lock:
            if self._abandoned >= self.workers:
                raise PoolExhaustedError(
                    f"all {self.workers} workers for sync tools are still running calls that "
                    "timed out; no more sync tool calls can run until one returns (raise the "
                    "pool with Oracle(sync_tool_workers=...), or make the tools stop when "
                    "ToolContext.cancelled is set)"
                )
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, "oracle-tool")
            future: Future[Any] = self._executor.submit(_unless_cancelled, function, cancel)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), seconds)
        except (TimeoutError, asyncio.CancelledError):
            cancel.set()
            if not future.cancel():  # already running: its worker is held until it returns
                self._hold(future)
            raise

    def _hold(self, future: Future[Any]) -> None:
        with self._lock:
            self._abandoned += 1

        def released(_: Future[Any]) -> None:
            with self._lock:
                self._abandoned -= 1

        future.add_done_callback(released)

    def close(self) -> None:
        """Stop taking calls; queued calls are dropped, running ones are left to finish."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


def _unless_cancelled(function: Callable[[], Any], cancel: threading.Event) -> Any:
    if cancel.is_set():  # abandoned while it waited for a worker: never start it
        raise TimeoutError("abandoned before it started")
    return function()
