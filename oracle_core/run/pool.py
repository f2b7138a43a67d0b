"""The oracle's own bounded pool of worker threads for sync tools, in one bulkhead a plugin.

Python cannot stop a thread. A sync tool that hangs past its timeout keeps its worker until
it returns, so sync tools get a pool of their own per oracle (never the event loop's default
executor, which litellm, SQLite and everything else share): a hung tool can use up this pool
and no more.

Within the pool each plugin has a share (:mod:`oracle_core.settings.sync_tools`; half the
pool by default): its calls that are queued, running, or abandoned after their timeout but
still running, hold at most that many workers, so one plugin whose tools hang can exhaust
only its own share and the other plugins' sync tools keep answering. A call over its
plugin's share waits for one of the plugin's calls to end, within its own timeout (the same
time it had to run: a share that stays busy that long fails the call, naming the plugin and
the setting to raise). When every worker of the share is held by an abandoned call, new
calls of that plugin fail at once, instead of queueing behind calls that may never end; the
same holds for the whole pool. An abandoned call never starts.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from oracle_core.settings.sync_tools import SyncToolShares

DEFAULT_SYNC_WORKERS = 8
"""Worker threads for sync tools per oracle, unless the operator sets another number."""

_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class PoolExhaustedError(RuntimeError):
    """A sync tool call cannot have a worker: its plugin's share, or the whole pool, is held."""


@dataclass
class _Share:
    """One plugin's part of the pool."""

    limit: int
    live: int = 0
    """Calls handed to a worker and not finished (queued, running or abandoned)."""
    abandoned: int = 0
    """Of those, calls that timed out or were cancelled while already running."""
    waiters: deque[_Waiter] = field(default_factory=deque)
    """Calls over the share, first come first served, each woken on its own loop."""


@dataclass
class _Call:
    share: _Share | None
    abandoned: bool = False


class SyncToolPool:
    """A bounded thread pool split into per-plugin shares, aware of its abandoned calls.

    Args:
        workers: how many sync tool calls may run at once.
        shares: how many of them one plugin's calls may hold (default: half, at least one).
    """

    def __init__(
        self, workers: int = DEFAULT_SYNC_WORKERS, shares: SyncToolShares | None = None
    ) -> None:
        if workers < 1:
            raise ValueError(f"the sync-tool pool needs at least one worker, not {workers}")
        self.workers = workers
        self.shares = shares or SyncToolShares()
        self._executor: ThreadPoolExecutor | None = None
        self._abandoned = 0
        self._plugins: dict[str, _Share] = {}
        self._lock = threading.Lock()

    @property
    def abandoned(self) -> int:
        """Workers held right now by calls that timed out or were cancelled."""
        return self._abandoned

    def share(self, plugin: str) -> int:
        """How many workers ``plugin``'s calls may hold at once."""
        return self.shares.of(plugin, self.workers)

    async def run(
        self,
        function: Callable[[], Any],
        seconds: float,
        cancel: threading.Event,
        plugin: str | None = None,
    ) -> Any:
        """Run ``function`` on a worker within ``seconds``, counted against ``plugin``'s share.

        ``seconds`` covers the wait for a worker of the share and the call itself. On
        timeout (or when the awaiting task is cancelled) ``cancel`` is set, so a cooperative
        tool can stop, and a call already running counts as abandoned until it returns.

        Args:
            function: the call, with its arguments bound.
            seconds: how long it may take, waiting included.
            cancel: set when the call is given up.
            plugin: whose share the call draws from; ``None``: only the pool bounds it.

        Raises:
            PoolExhaustedError: the plugin's share is held by abandoned calls, or stayed busy
                for all of ``seconds``, or every worker of the pool holds an abandoned call.
            TimeoutError: the call took longer than ``seconds``.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        share = None if plugin is None else self._share_of(plugin)
        if share is not None and plugin is not None:
            try:
                await self._enter(share, plugin, deadline, seconds)
            except BaseException:
                cancel.set()
                raise
        call = _Call(share)
        try:
            future = self._submit(function, cancel)
        except BaseException:
            self._finished(call)
            raise
        future.add_done_callback(lambda _: self._finished(call))
        try:
            remaining = max(deadline - loop.time(), 0.0)
            return await asyncio.wait_for(asyncio.wrap_future(future), remaining)
        except (TimeoutError, asyncio.CancelledError):
            cancel.set()
            if not future.cancel():  # already running: its worker is held until it returns
                self._hold(future, call)
            raise

    def _share_of(self, plugin: str) -> _Share:
        with self._lock:
            share = self._plugins.get(plugin)
            if share is None:
                share = self._plugins[plugin] = _Share(self.share(plugin))
            return share

    async def _enter(self, share: _Share, plugin: str, deadline: float, seconds: float) -> None:
        """Take a place in ``plugin``'s share, waiting for one until ``deadline``."""
        loop = asyncio.get_running_loop()
        woken = False
        while True:
            with self._lock:
                self._check_pool()  # the whole pool first: then no plugin is spared
                if share.abandoned >= share.limit:
                    raise PoolExhaustedError(self._held_message(plugin, share))
                # Newcomers queue behind waiters, so a waiting call is not overtaken forever.
                if share.live < share.limit and (woken or not share.waiters):
                    share.live += 1
                    return
                waiter: asyncio.Future[None] = loop.create_future()
                if woken:
                    share.waiters.appendleft((loop, waiter))  # overtaken: keep its turn
                else:
                    share.waiters.append((loop, waiter))
            try:
                await asyncio.wait_for(waiter, max(deadline - loop.time(), 0.0))
            except BaseException as error:
                self._forget(share, waiter)
                if isinstance(error, TimeoutError):
                    raise PoolExhaustedError(self._busy_message(plugin, share, seconds)) from None
                raise
            woken = True

    def _forget(self, share: _Share, waiter: asyncio.Future[None]) -> None:
        """A waiter gave up; if it had been woken already, its turn passes to the next."""
        with self._lock:
            for index, (_, queued) in enumerate(share.waiters):
                if queued is waiter:
                    del share.waiters[index]
                    return
            self._wake(share)

    def _submit(self, function: Callable[[], Any], cancel: threading.Event) -> Future[Any]:
        with self._lock:
            self._check_pool()
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, "oracle-tool")
            # In the caller's context, as asyncio.to_thread does: the run's ids reach the
            # tool's log lines (telemetry/log_context.py).
            context = contextvars.copy_context()
            return self._executor.submit(context.run, _unless_cancelled, function, cancel)

    def _check_pool(self) -> None:
        """Fail when every worker holds an abandoned call (the lock is held)."""
        if self._abandoned >= self.workers:
            raise PoolExhaustedError(
                f"all {self.workers} workers for sync tools are still running calls that "
                "timed out; no more sync tool calls can run until one returns (raise the "
                "pool with ORACLE_SYNC_TOOL_WORKERS or Oracle(limits=RunLimits("
                "sync_tool_workers=...)), lower each plugin's share with "
                "ORACLE_SYNC_TOOL_SHARE, or make the tools stop when ToolContext.cancelled "
                "is set)"
            )

    def _hold(self, future: Future[Any], call: _Call) -> None:
        with self._lock:
            if future.done():
                return  # it returned meanwhile: nothing is held
            call.abandoned = True
            self._abandoned += 1
            share = call.share
            if share is not None:
                share.abandoned += 1
                if share.abandoned >= share.limit:
                    # The share can only free up when a hung call returns: the calls waiting
                    # for it fail now, saying so, rather than at the end of their timeout.
                    while share.waiters:
                        self._wake(share)

    def _finished(self, call: _Call) -> None:
        """A call left its worker (returned, raised, or was dropped before it started)."""
        with self._lock:
            if call.abandoned:
                self._abandoned -= 1
            share = call.share
            if share is None:
                return
            share.live -= 1
            if call.abandoned:
                share.abandoned -= 1
            self._wake(share)

    def _wake(self, share: _Share) -> None:
        """Wake the first call waiting for ``share`` (the lock is held)."""
        while share.waiters:
            loop, waiter = share.waiters.popleft()
            try:
                loop.call_soon_threadsafe(_set, waiter)
                return
            except RuntimeError:  # its loop is closed: nobody waits there any more
                continue

    def _held_message(self, plugin: str, share: _Share) -> str:
        return (
            f"plugin {plugin!r} has all {share.limit} of its sync-tool workers held by calls "
            "that timed out and still run, so its sync tools cannot run until one returns "
            "(other plugins' sync tools still have the rest of the pool); raise its share with "
            f"{self.shares.setting(plugin)}, or make its tools stop when "
            "ToolContext.cancelled is set"
        )

    def _busy_message(self, plugin: str, share: _Share, seconds: float) -> str:
        return (
            f"plugin {plugin!r} had all {share.limit} of its sync-tool workers busy for the "
            f"whole {seconds:g} s this call could take, so it did not run; raise its share "
            f"with {self.shares.setting(plugin)}, or make its tools return sooner"
        )

    def close(self) -> None:
        """Stop taking calls; queued calls are dropped, running ones are left to finish."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


def _set(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # it may have timed out meanwhile
        waiter.set_result(None)


def _unless_cancelled(function: Callable[[], Any], cancel: threading.Event) -> Any:
    if cancel.is_set():  # abandoned while it waited for a worker: never start it
        raise TimeoutError("abandoned before it started")
    return function()
