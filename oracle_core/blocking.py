"""The blocking face of the facade: ``with`` blocks and the ``*_sync`` twins.

A script calls ``oracle.run_sync(...)`` again and again; every twin runs its coroutine
method on one event loop the object keeps between calls (an :class:`asyncio.Runner`), so
plugins' connections opened on the first call still work on the next. The twins are made
by one helper, :func:`sync_twin`, instead of being written out one by one: each has the
signature and return type of its coroutine method (for readers, ``inspect`` and mypy).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
B = TypeVar("B", bound="Blocking")


class Blocking:
    """A base for an object with coroutine ``start`` and ``close``: its context managers and
    the event loop its ``*_sync`` twins share."""

    _runner: asyncio.Runner | None = None  # made on the first twin call, per object

    async def start(self) -> None:
        """Start (the subclass says what that means)."""

    async def close(self) -> None:
        """Close (the subclass says what that means)."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._block(self.close(), closes=True)

    def _block(self, work: Coroutine[Any, Any, R], *, closes: bool = False) -> R:
        """Run ``work`` on the kept event loop; ``closes``: then close that loop too."""
        if closes:
            runner, self._runner = self._runner, None
            if runner is None:
                return asyncio.run(work)
            try:
                return runner.run(work)
            finally:
                runner.close()
        if self._runner is None:
            self._runner = asyncio.Runner()
            weakref.finalize(self, _discard, self._runner)
        return self._runner.run(work)


def sync_twin(
    method: Callable[Concatenate[B, P], Coroutine[Any, Any, R]],
    *,
    closes: bool = False,
    doc: str | None = None,
) -> Callable[Concatenate[B, P], R]:
    """The blocking twin of a coroutine method, to assign in the class body.

    Args:
        method: the coroutine method (``Oracle.run``).
        closes: the twin closes the kept event loop after (``close_sync``).
        doc: its docstring; default a line naming ``method``.
    """

    @functools.wraps(method)
    def twin(self: B, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._block(method(self, *args, **kwargs), closes=closes)

    name = method.__name__.strip("_")
    twin.__name__ = f"{name}_sync"
    twin.__qualname__ = f"{method.__qualname__}_sync"
    twin.__doc__ = doc or f":meth:`{name}` for scripts (on the event loop they share)."
    return twin


def _discard(runner: asyncio.Runner) -> None:
    """Close the event loop of a script's object that was never closed.

    Called when the object is garbage-collected, which may happen while another event
    loop runs in this thread: then the loop is closed without running it again.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        runner.close()
        return
    with contextlib.suppress(RuntimeError):
        loop = runner.get_loop()
        if not loop.is_closed():
            loop.close()
