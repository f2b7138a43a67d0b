"""Fewer garbage collections while an oracle assembles its plugins.

Assembling a large catalog allocates millions of objects that all stay alive (modules,
tools, manifests, schemas), so CPython's collector, run every 700 allocations of the young
generation, scans them again and again for nothing: with 4,000 plugins about 900
collections cost half a second (``bench/startup.py``). :func:`fewer_collections` raises the
young generation's threshold for the assembly only and puts the application's own back
after, in the command line and in an application that builds an :class:`~oracle_core.Oracle`
alike.

The collector's thresholds belong to the whole process, so the one piece of process state
here is shared on purpose: a count of the assemblies under way (two threads may build
oracles at once), so the threshold is restored when the last one ends, never while another
still runs, and always to what the application had set.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

ASSEMBLY_GC_THRESHOLD = 20_000
"""Allocations between young-generation collections while an oracle assembles."""


class _Assemblies:
    """The assemblies under way in this process and the thresholds to restore after them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.before: tuple[int, int, int] = gc.get_threshold()


_UNDER_WAY = _Assemblies()  # the collector is process-wide: so is this count (see above)


@contextlib.contextmanager
def fewer_collections(young: int = ASSEMBLY_GC_THRESHOLD) -> Iterator[None]:
    """Collect the young generation every ``young`` allocations (at least the current
    threshold) while the block runs; the thresholds the application had come back after."""
    with _UNDER_WAY.lock:
        if _UNDER_WAY.running == 0:
            _UNDER_WAY.before = gc.get_threshold()
            before = _UNDER_WAY.before
            gc.set_threshold(max(young, before[0]), *before[1:])
        _UNDER_WAY.running += 1
    try:
        yield
    finally:
        with _UNDER_WAY.lock:
            _UNDER_WAY.running -= 1
            if _UNDER_WAY.running == 0:
                gc.set_threshold(*_UNDER_WAY.before)
