"""The ``*_sync`` twins, made by one helper: same signature, a docstring, one event loop."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from oracle_core import Oracle
from oracle_core.blocking import Blocking, sync_twin

TWINS = [
    "run",
    "decide",
    "operations",
    "operation",
    "cancel_operation",
    "supply_credential",
    "close",
]


@pytest.mark.parametrize("name", TWINS)
def test_each_twin_has_its_coroutine_methods_signature_and_a_docstring(name: str) -> None:
    method, twin = getattr(Oracle, name), getattr(Oracle, f"{name}_sync")

    assert inspect.iscoroutinefunction(method) and not inspect.iscoroutinefunction(twin)
    assert inspect.signature(twin) == inspect.signature(method)
    assert twin.__name__ == f"{name}_sync"
    assert twin.__doc__ and f":meth:`{name}`" in twin.__doc__


class Counter(Blocking):
    """Counts on whatever event loop it is called on."""

    def __init__(self) -> None:
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.closed = 0

    async def add(self, step: int, *, times: int = 1) -> int:
        self.loops.append(asyncio.get_running_loop())
        return step * times

    async def close(self) -> None:
        self.closed += 1

    add_sync = sync_twin(add)
    close_sync = sync_twin(close, closes=True)


def test_twins_share_one_event_loop_until_the_closing_twin_closes_it() -> None:
    counter = Counter()

    assert counter.add_sync(2, times=3) == 6
    assert counter.add_sync(1) == 1
    loop = counter.loops[0]
    assert counter.loops == [loop, loop] and not loop.is_closed()
    counter.close_sync()
    assert loop.is_closed() and counter.closed == 1
    counter.close_sync()  # no loop kept any more: closes on a fresh one
    assert counter.closed == 2


def test_with_closes_through_the_kept_loop() -> None:
    with Counter() as counter:
        counter.add_sync(1)
    assert counter.closed == 1 and counter.loops[0].is_closed()
