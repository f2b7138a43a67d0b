"""A thread that runs plugin hook code under a timeout, and is replaced when a hook hangs.

Python cannot stop a thread, so a hook that never returns can only be abandoned: the core
stops waiting, reports the plugin, and sends later calls to a fresh thread. The threads are
daemons, so an abandoned one never keeps the process from exiting (which rules out
``concurrent.futures.ThreadPoolExecutor`` and asyncio's default executor: both join their
threads at exit). One thread is reused for every call, so a call costs a hand-off, not a
thread start.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")

_Job = tuple[Callable[[], object], "Future[object]"]


class HookTimeout(Exception):
    """A hook did not return within its time.

    Attributes:
        hook: the hook that was running.
        seconds: the time it had.
    """

    def __init__(self, hook: str, seconds: float) -> None:
        super().__init__(f"hook {hook} did not return within {seconds:g} s")
        self.hook = hook
        self.seconds = seconds


class Progress:
    """Which hook a job is in, and since when: a job calls :meth:`enter` before each hook."""

    def __init__(self) -> None:
        self.state = ("", time.monotonic())

    def enter(self, hook: str) -> None:
        """The job starts calling ``hook`` now (its time starts again)."""
        self.state = (hook, time.monotonic())  # one assignment: read whole by the waiter


class HookWorker:
    """Runs hook calls on one reusable daemon thread.

    Args:
        name: the thread's name (shown in debuggers and thread dumps).
    """

    def __init__(self, name: str = "oracle-hooks") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[_Job | None] | None = None

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Run ``fn`` on the worker thread (in a copy of the caller's context)."""
        if self._queue is None:
            self._queue = queue.SimpleQueue()
            thread = threading.Thread(target=_serve, args=(self._queue,), name=self._name)
            thread.daemon = True
            thread.start()
        future: Future[T] = Future()
        context = contextvars.copy_context()
        self._queue.put((lambda: context.run(fn), future))  # type: ignore[arg-type]
        return future

    def run(self, job: Callable[[Progress], T], timeout: float) -> T:
        """Run ``job`` and wait for it, giving each hook it enters ``timeout`` seconds.

        Raises:
            HookTimeout: naming the hook that overran; the thread is abandoned.
        """
        progress = Progress()
        future = self.submit(lambda: job(progress))
        while True:
            hook, since = progress.state
            try:
                return future.result(max(since + timeout - time.monotonic(), 0.0))
            except TimeoutError:
                hook, since = progress.state
                if since + timeout <= time.monotonic():
                    self.abandon()
                    raise HookTimeout(hook, timeout) from None

    async def run_async(self, fn: Callable[[], T], hook: str, seconds: float) -> T:
        """Run ``fn`` on the worker without blocking the event loop; at most ``seconds``.

        Raises:
            HookTimeout: ``fn`` overran; the thread is abandoned.
        """
        try:
            return await asyncio.wait_for(asyncio.wrap_future(self.submit(fn)), seconds)
        except TimeoutError:
            self.abandon()
            raise HookTimeout(hook, seconds) from None

    def abandon(self) -> None:
        """Give up on the thread (stuck in a hook); later calls start a new one."""
        self.close()

    def close(self) -> None:
        """Let the thread end once its current call returns."""
        if self._queue is not None:
            self._queue.put(None)
            self._queue = None


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while (job := jobs.get()) is not None:
        fn, future = job
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(fn())
        except BaseException as error:  # handed to the waiter, who decides
            future.set_exception(error)
