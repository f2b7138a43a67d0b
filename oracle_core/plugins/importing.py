"""Importing an installed plugin: timed, its failure named, its modules' files noted.

Each installed plugin's import is timed: one slower than ``ORACLE_SLOW_IMPORT_SECONDS``
is logged as a warning naming it, since every start pays for it (the cache cannot skip an
import). Imports run on the assembly's worker thread (:func:`import_all`), each within
``ORACLE_HOOK_TIMEOUT`` as a hook is: one that overruns is abandoned (Python cannot stop
it) and its plugin left out naming the bound, so a hung or very slow import no longer
holds the start.
:func:`import_times` collects the times for ``oracle plugins``. The files of the modules
an import loaded key the plugin's deferral record (:mod:`oracle_core.plugins.cache`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import logging
import sys
import threading
import time
from collections.abc import Iterator, Sequence

from oracle_core.errors import PluginLoadError
from oracle_core.plugins.candidate import Entry
from oracle_core.plugins.where import failure_location, full_traceback
from oracle_core.plugins.worker import HookTimeout, HookWorker, Progress

log = logging.getLogger("oracle_core.plugins")

_IMPORT_TIMES: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar(
    "oracle_plugin_import_times", default=None
)


@contextlib.contextmanager
def import_times() -> Iterator[dict[str, float]]:
    """Collect how long each plugin took to import, for the assemblies run inside the block.

    Yields a dict, filled as plugins are assembled: seconds by plugin name (its manifest's
    name, or its entry point's when it failed). Only plugins the oracle imported are in
    it, not those given in code. ``oracle plugins`` shows the slow ones with it.
    """
    times: dict[str, float] = {}
    token = _IMPORT_TIMES.set(times)
    try:
        yield times
    finally:
        _IMPORT_TIMES.reset(token)


def import_plugin(entry: Entry, *, traced: bool) -> None:
    """Import an installed plugin; a failure is kept on the entry, naming where.

    With ``traced`` (``ORACLE_TRACE_PLUGINS=1``) a failure's whole traceback is printed.
    """
    source = entry.source
    started = time.perf_counter()
    known = len(sys.modules)
    try:
        entry.obj = source.load()
    except Exception as error:
        entry.import_seconds = time.perf_counter() - started
        where = failure_location(error, source.value)
        at = f" at {where}" if where else ""
        entry.failure = PluginLoadError(
            f"import of {source.value!r} failed{at}: {type(error).__name__}: {error}",
            plugin=source.name,
            distribution=source.distribution,
        )
        if traced:  # ORACLE_TRACE_PLUGINS=1: the whole traceback
            print(
                f"oracle: import of plugin {source.name} failed:\n{full_traceback(error)}",
                file=sys.stderr,
                flush=True,
            )
        return
    entry.import_seconds = time.perf_counter() - started
    entry.modules = _module_files(known)


def import_all(
    worker: HookWorker, entries: Sequence[Entry], timeout: float, *, traced: bool
) -> None:
    """Import the plugins of ``entries`` not imported yet, in order, on ``worker``, each
    within ``timeout`` seconds.

    One job imports them one after another (no thread hand-off per plugin). An import that
    overruns is abandoned with its thread, its plugin gets a failure naming the bound, and
    the plugins after it are imported by a new job.
    """
    pending = [e for e in entries if e.obj is None]
    at = [0]  # the next plugin to import, shared with the running job

    def job(progress: Progress, abandoned: threading.Event) -> None:
        while at[0] < len(pending) and not abandoned.is_set():
            entry = pending[at[0]]
            progress.enter(f"import of {entry.source.value!r}")
            import_plugin(entry, traced=traced)
            if abandoned.is_set():  # it finished too late: it stays left out
                return
            at[0] += 1

    while at[0] < len(pending):
        abandoned = threading.Event()
        try:
            worker.run(functools.partial(job, abandoned=abandoned), timeout)
        except HookTimeout:
            abandoned.set()  # its thread, should the import end, imports nothing more
            entry = pending[at[0]]
            at[0] += 1
            entry.obj = None
            entry.failure = PluginLoadError(
                f"import of {entry.source.value!r} did not finish within {timeout:g} s "
                "(ORACLE_HOOK_TIMEOUT): it is left out; import heavy modules inside the tools "
                "that use them, or raise ORACLE_HOOK_TIMEOUT",
                plugin=entry.source.name,
                distribution=entry.source.distribution,
            )


def _module_files(known: int) -> list[str] | None:
    """The files of the modules imported since ``sys.modules`` held ``known`` of them.

    Modules are added to ``sys.modules`` at its end, so they are the last ones. ``None``
    when that cannot be told (another thread changed it meanwhile).
    """
    grown = len(sys.modules) - known
    if grown < 0:
        return None
    try:
        names = list(itertools.islice(reversed(sys.modules), grown))
    except RuntimeError:
        return None
    files = (getattr(sys.modules.get(n), "__file__", None) for n in names)
    return [f for f in files if isinstance(f, str)]


def report_imports(entries: Sequence[Entry], slow: float) -> None:
    """Warn about each import slower than ``slow`` seconds; hand the times to
    :func:`import_times` when a caller collects them."""
    times = _IMPORT_TIMES.get()
    for entry in entries:
        seconds = entry.import_seconds
        if seconds is None:
            continue
        name = entry.plugin.name if entry.plugin is not None else entry.source.name
        if times is not None:
            times[name] = seconds
        if seconds > slow:
            dist = f" [{entry.source.distribution}]" if entry.source.distribution else ""
            log.warning(
                "plugin %s%s took %.2f s to import, over ORACLE_SLOW_IMPORT_SECONDS=%g: every "
                "start waits for it (import heavy modules inside the tools that use them)",
                name,
                dist,
                seconds,
                slow,
            )
