"""Assembling plugins into a :class:`~oracle_core.plugins.registry.Registry`.

Each plugin is imported and registered with the oracle's own plugin manager; then its
assembly hooks (manifest, tools, middleware, routes) are called through pluggy, one plugin
at a time and each hook under a timeout, and everything it gave is checked by the
validator (:mod:`oracle_core.plugins.validate`). A plugin with any error is left out and
recorded with its name, distribution and every problem; the others go on. Last, names and
``depends_on`` are resolved across plugins (:mod:`oracle_core.plugins.resolve`).

Every step is linear in the number of plugins: they are registered in one batch
(:func:`~oracle_core.plugins.hooks.register_plugins`), and an installed plugin whose files
and tools have not changed since it last passed is not checked again tool by tool
(:mod:`oracle_core.plugins.cache`). An installed plugin that gave nothing but a manifest and
tools last time, with the same files and configuration now, is not even imported: it is
assembled from the cache and imported, through this same path, when a tool of it is first
validated or called (:mod:`oracle_core.plugins.deferred`).

Each installed plugin's import is timed: one slower than ``ORACLE_SLOW_IMPORT_SECONDS``
is logged as a warning naming it, since every start pays for it (the cache cannot skip an
import, and an import cannot be cut off in process: a hung one hangs the start).
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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pluggy
from pydantic import BaseModel

from oracle_core.authoring.host import PluginHost
from oracle_core.authoring.manifest import ManifestWarning, PluginManifest
from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import PluginConfigError, PluginError, PluginLoadError
from oracle_core.plugins.cache import StartupCache
from oracle_core.plugins.config import load_plugin_config
from oracle_core.plugins.deferred import (
    DEFERRABLE_HOOKS,
    DeferredImport,
    config_digest,
    deferral_record,
    deferred_plugin,
)
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.hooks import (
    ASSEMBLY_HOOKS,
    HookImpls,
    HookTrace,
    call_plugin_hook,
    new_plugin_manager,
    register_plugins,
)
from oracle_core.plugins.integrity import CoreSnapshot
from oracle_core.plugins.patch_trace import trace_patches
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.plugins.resolve import resolve
from oracle_core.plugins.validate import (
    HookResults,
    Problem,
    Validation,
    hook_problems,
    plugin_error,
    validate,
)
from oracle_core.plugins.where import failure_location, full_traceback
from oracle_core.plugins.worker import HookTimeout, HookWorker, Progress
from oracle_core.settings import DEFAULT_HOOK_TIMEOUT

__all__ = [
    "Candidate",
    "assemble",
    "declared_name",
    "import_times",
    "new_plugin_manager",
    "source_for_object",
]

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


@dataclass
class Candidate:
    """A plugin to assemble: its source and, once imported, its object."""

    source: PluginSource
    obj: Any = None


def source_for_object(obj: Any) -> PluginSource:
    """A :class:`PluginSource` for a plugin given in code (a module or an object)."""
    name = getattr(obj, "__name__", None) or type(obj).__name__
    return PluginSource(name=str(name).rsplit(".", 1)[-1], value=str(getattr(obj, "__name__", "")))


CHECK_EVERY = 64
"""Plugins imported, and plugins whose assembly hooks run, between two checks of the core
for patches. A change found is traced to its plugin (imports: again in another process;
hooks: called again, one plugin at a time, with a check after each): the usual start,
where no plugin patches anything, pays one check for this many plugins, not one each."""


@dataclass
class _Batch:
    """Where a worker job that calls many plugins' hooks is, and whether it was abandoned."""

    index: int
    cancelled: bool = False
    checked: int = 0
    """Every plugin before this index had its hooks called with the core found unchanged after."""
    careful_until: int = 0
    """Plugins before this index are checked one by one (they are being called again)."""
    skip: frozenset[int] = frozenset()
    """Plugins whose hooks timed out: never called again."""
    unexplained: dict[int, list[str]] = field(default_factory=dict)
    """Changes found when a plugin timed out, by its index: blamed on it, unless a plugin
    called again before it makes them again."""


@dataclass
class _Entry:
    """One candidate on its way through assembly."""

    source: PluginSource
    obj: Any = None
    registration: list[Problem] = field(default_factory=list)
    parsed: dict[str, Any] = field(default_factory=dict)
    registered: bool = False
    failure: PluginError | None = None
    plugin: Plugin | None = None
    warnings: list[ManifestWarning] = field(default_factory=list)
    config: Any = None
    import_seconds: float | None = None
    """How long its import took (``None``: given in code, never imported here)."""
    modules: list[str] | None = None
    """The files of the modules its import loaded first (``None``: not known)."""


class _Assembler:
    def __init__(
        self,
        manager: pluggy.PluginManager,
        host: PluginHost,
        timeout: float,
        cache: StartupCache | None,
    ) -> None:
        self.manager = manager
        self.host = host
        self.timeout = timeout
        self.cache = cache
        self.deferring = threading.RLock()
        """Held while a deferred plugin of this assembly is imported on first use."""
        self.worker = HookWorker("oracle-assembly")
        self.core = CoreSnapshot.take()
        self.trace: HookTrace | None = None
        if host.settings.trace_plugins:
            # Installed for the manager's lifetime: startup and shutdown calls are traced too.
            self.trace = HookTrace()
            self.trace.install(manager)

    def load(self, entries: Sequence[_Entry]) -> None:
        """Import the plugins in order and find what the core cannot honour in their hooks.

        The core is checked for patches once every :data:`CHECK_EVERY` imports. A change
        found is undone, and traced to the plugins that made it by importing them again,
        one at a time, in another process (:mod:`~oracle_core.plugins.patch_trace`).
        """
        for start in range(0, len(entries), CHECK_EVERY):
            batch = entries[start : start + CHECK_EVERY]
            for entry in batch:
                if entry.obj is None:
                    self._import(entry)
            self._check_imports(batch)
            for entry in batch:
                if entry.failure is None:
                    entry.registration = hook_problems(self.manager, entry.obj, entry.parsed)

    def _import(self, entry: _Entry) -> None:
        """Import an installed plugin; a failure is kept on the entry, naming where."""
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
            if self.trace is not None:  # ORACLE_TRACE_PLUGINS=1: the whole traceback
                print(
                    f"oracle: import of plugin {source.name} failed:\n{full_traceback(error)}",
                    file=sys.stderr,
                    flush=True,
                )
            return
        entry.import_seconds = time.perf_counter() - started
        entry.modules = _module_files(known)

    def _check_imports(self, batch: Sequence[_Entry]) -> None:
        """Undo any change the imports of ``batch`` made to the core; whoever made one is
        left out, saying what (a plugin that failed to import included)."""
        changed = self.core.changes()
        if not changed:
            return
        self.core.restore()
        imported = [e for e in batch if e.import_seconds is not None]
        if not imported:  # nothing of this batch ran: another thread of the application
            log.warning("oracle-core was changed while plugins assembled (%s): undone", changed)
            return
        if len(imported) == 1:
            self._blame(imported[0], changed)
            return
        seconds = sum(e.import_seconds or 0.0 for e in imported)
        traced = trace_patches([e.source.value for e in imported], timeout=max(60.0, 4 * seconds))
        if traced is None:
            traced = [[] for _ in imported]
        named = [(e, names) for e, names in zip(imported, traced, strict=True) if names]
        for entry, names in named:
            self._blame(entry, names)
        if not named:
            log.warning(
                "a plugin changed oracle-core when imported (%s); the change was undone, but "
                "importing them again one at a time did not show whose it was: one of %s",
                ", ".join(changed[:5]),
                ", ".join(e.source.name for e in imported),
            )

    def defer(self, entry: _Entry) -> bool:
        """Assemble an installed plugin from its cache entry without importing it, if it may be.

        It may when the cache keeps a deferral record for it whose files are unchanged
        and whose configuration digest is that of its configuration now.
        """
        if self.cache is None or entry.obj is not None or entry.source.distribution is None:
            return False
        found = self.cache.deferred(entry.source)
        if found is None:
            return False
        record, schemas = found
        settings = self.host.settings
        try:
            name = record["name"]
            if not isinstance(name, str) or not set(record["hooks"]) <= DEFERRABLE_HOOKS:
                return False
            section = settings.plugin_section(name)
            config = load_plugin_config(
                name, None, section, settings.env, settings.plugin_overrides
            )
            if config_digest(config) != record["config"]:
                return False
            later = DeferredImport(
                entry.source,
                name,
                functools.partial(_import_deferred, self.host, self.timeout, schemas.cache),
                self.deferring,
            )
            entry.plugin, entry.warnings = deferred_plugin(
                record, entry.source, config, schemas, later
            )
        except (PluginConfigError, KeyError, TypeError, ValueError):
            return False  # imported as before, which reports what is wrong
        return True

    def remember(self, entry: _Entry) -> None:
        """Keep in the cache whether (and how) a plugin that just passed may be deferred."""
        if self.cache is None or entry.plugin is None or entry.source.distribution is None:
            return
        record = None
        if entry.modules is not None and not entry.registration:
            hooks = {
                (opts.get("specname") or attr)
                for attr, opts in entry.parsed.items()
                if opts is not None
            }
            record = deferral_record(
                entry.plugin, hooks, config_digest(entry.config), entry.warnings
            )
        self.cache.keep_deferred(entry.source, record, entry.modules or ())

    def register(self, entries: Sequence[_Entry]) -> None:
        """Register the loaded plugins with the manager at once (or record why not)."""
        ready = [e for e in entries if e.failure is None]
        outcomes = register_plugins(
            self.manager,
            [
                (
                    e.obj,
                    f"{e.source.distribution}:{e.source.name}" if e.source.distribution else None,
                )
                for e in ready
            ],
            [e.parsed for e in ready],
        )
        for entry, error in zip(ready, outcomes, strict=True):
            source = entry.source
            if error is not None:  # what pluggy refuses: our own problems say it better
                problems = entry.registration or [Problem(f"could not be registered: {error}")]
                entry.failure = plugin_error(
                    problems, plugin=source.name, distribution=source.distribution
                )
                continue
            entry.registered = True
            if self.trace is not None:
                self.trace.label(entry.obj, source.name)

    def call_all(self, entries: Sequence[_Entry], impls: HookImpls) -> list[HookResults]:
        """Call each plugin's assembly hooks, in order, in as few worker jobs as possible.

        One job runs the plugins one after another (each in its own copy of the caller's
        context), so a plugin costs no thread hand-off; the core is checked for patches
        every :data:`CHECK_EVERY` plugins, and a change is traced to the plugin that made
        it by calling the hooks since the last clean check again, one plugin at a time.
        Every hook still has ``timeout`` seconds: when one overruns, its plugin gets a
        timeout, the thread is abandoned (it stops before the next plugin), and the
        plugins after it go on in a new job.

        Returns:
            Each plugin's hook results (a plugin that changed the core has its failure set).
        """
        results = [HookResults() for _ in entries]
        state = _Batch(0)
        while state.index < len(entries):
            try:
                self.worker.run(
                    functools.partial(self._call_batch, entries, impls, results, state),
                    self.timeout,
                )
                break
            except HookTimeout as timeout:
                state.cancelled = True
                at = state.index
                # A snapshot: the abandoned thread may still write to ``results`` later.
                got = results[at]
                results[at] = HookResults(dict(got.results), dict(got.raised), timeout)
                state = self._after_timeout(state, at)
        return results

    def _after_timeout(self, state: _Batch, at: int) -> _Batch:
        """Where the next job starts once plugin ``at`` timed out in its hooks.

        Unchanged core: after it. Changed: the change is undone, and the plugins since the
        last clean check are called again one by one; the change is its, unless one of
        them makes it again.
        """
        skip = state.skip | {at}
        changed = self.core.changes()
        if not changed:
            return _Batch(
                at + 1,
                checked=at + 1,
                careful_until=state.careful_until,
                skip=skip,
                unexplained=state.unexplained,
            )
        self.core.restore()
        return _Batch(
            state.checked,
            checked=state.checked,
            careful_until=max(at + 1, state.careful_until),
            skip=skip,
            unexplained={**state.unexplained, at: changed},
        )

    def _call_batch(
        self,
        entries: Sequence[_Entry],
        impls: HookImpls,
        results: list[HookResults],
        state: _Batch,
        progress: Progress,
    ) -> None:
        """Runs on the worker thread: the hooks of ``entries[state.index:]``, one by one."""
        index = state.index
        while index < len(entries):
            if state.cancelled:
                return
            state.index = index
            entry = entries[index]
            if index not in state.skip:
                if index < state.careful_until:
                    results[index] = HookResults()  # called again: nothing of the first call
                progress.enter("")
                contextvars.copy_context().run(
                    self._call_hooks, entry, impls, progress, results[index]
                )
                if state.cancelled:
                    return  # abandoned in this plugin's hooks: the caller checks the core
            if index < state.careful_until:
                self._check_one(entry, index, state)
            elif index + 1 - state.checked >= CHECK_EVERY or index + 1 == len(entries):
                changed = self.core.changes()
                if changed:
                    self.core.restore()
                    if index == state.checked:
                        self._blame(entry, changed)
                    else:  # somebody since the last clean check: find who
                        state.careful_until = index + 1
                        index = state.checked
                        continue
            else:
                index += 1
                continue
            state.checked = index + 1
            index += 1

    def _check_one(self, entry: _Entry, index: int, state: _Batch) -> None:
        """The check after one plugin called again: a change is its. So are the changes
        found when its hook timed out, unless a plugin called again before it made them."""
        changed = self.core.changes()
        if changed:
            self.core.restore()
            self._blame(entry, changed)
            state.unexplained.clear()  # explained
        elif found := state.unexplained.pop(index, None):
            self._blame(entry, found)

    def build(self, entry: _Entry, results: HookResults) -> None:
        """Validate what the plugin's assembly hooks gave, make its Plugin."""
        source = entry.source
        if entry.failure is not None:
            return  # it changed the core (found right after its hooks)
        key: str | None = None
        known = False

        def trusted(manifest: PluginManifest, tools: Sequence[Tool]) -> bool:
            nonlocal key, known
            if self.cache is None:
                return False
            key = self.cache.key(source, entry.obj, manifest, tools)
            known = self.cache.trusted(source, key, tools)
            return known

        checked = validate(
            source.name,
            results,
            version=source.version,
            registration=entry.registration,
            trusted=trusted,
        )
        if checked.errors:
            entry.failure = checked.failure(source.distribution)
            return
        if self.cache is not None and not known:
            self.cache.store(source, key, checked.tools)
        entry.config = results.config
        entry.plugin = self._plugin(entry, checked)
        entry.warnings = checked.manifest_warnings()

    def _call_hooks(
        self, entry: _Entry, impls: HookImpls, progress: Progress, results: HookResults
    ) -> None:
        """Runs on the worker thread: each assembly hook the plugin implements, in order.

        The plugin's configuration is read (and checked against the config model its
        manifest declares) right after ``oracle_manifest``; when it is unusable, no later
        hook is called.
        """
        refused = {p.hook for p in entry.registration}
        for hook in ASSEMBLY_HOOKS:
            if hook != "oracle_manifest" and not self._read_config(results, entry.source):
                return
            if hook in refused:
                continue  # its implementation cannot be honoured: reported, not called
            found = impls.of(entry.obj, hook)
            if not found:
                if hook == "oracle_manifest":
                    results.results[hook] = []
                continue
            progress.enter(hook)
            try:
                results.results[hook] = call_plugin_hook(
                    self.manager, hook, found, {"config": results.config, "oracle": self.host}
                )
            except Exception as error:
                results.raised[hook] = error
            if hook == "oracle_manifest" and self.trace is not None:
                self.trace.label(entry.obj, _declared_name(results, entry.source))
        self._read_config(results, entry.source)

    def _read_config(self, results: HookResults, source: PluginSource) -> bool:
        """Read the plugin's configuration into ``results`` once; whether it is usable."""
        if results.config is None and results.config_error is None:
            name = _declared_name(results, source)
            settings = self.host.settings
            try:
                results.config = load_plugin_config(
                    name,
                    _declared_config(results),
                    settings.plugin_section(name),
                    settings.env,
                    settings.plugin_overrides,
                )
            except PluginConfigError as error:
                results.config_error = error
        return results.config_error is None

    @staticmethod
    def _blame(entry: _Entry, changed: Sequence[str]) -> None:
        """Leave the plugin out for ``changed`` (already undone), naming what it changed."""
        shown = ", ".join(changed[:5]) + (
            f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        )
        entry.failure = PluginLoadError(
            f"changed oracle-core ({shown}); the change was undone and the plugin left out: "
            "a plugin may not patch the core, use middleware or hooks instead",
            plugin=entry.source.name,
            distribution=entry.source.distribution,
        )

    def _plugin(self, entry: _Entry, checked: Validation) -> Plugin:
        assert checked.manifest is not None
        name = checked.manifest.name
        for item in checked.middleware:
            item.plugin = name
        return Plugin(
            checked.manifest,
            entry.source,
            checked.tools,
            checked.middleware,
            checked.routes,
            entry.config if entry.config is not None else {},
            entry.obj,
        )


def _declared(results: HookResults, field: str) -> Any:
    """``field`` of the plugin's one manifest as given (valid or not); ``None`` without one."""
    manifests = results.results.get("oracle_manifest") or []
    if len(manifests) != 1:
        return None
    raw = manifests[0]
    return raw.get(field) if isinstance(raw, dict) else getattr(raw, field, None)


def _declared_name(results: HookResults, source: PluginSource) -> str:
    """The plugin's name as its manifest gives it (valid or not), else its source's name."""
    name = _declared(results, "name")
    return name if isinstance(name, str) and name else source.name


def _declared_config(results: HookResults) -> type[BaseModel] | None:
    """The config model the plugin's manifest declares (a bad one is the manifest's problem)."""
    model = _declared(results, "config")
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


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


def _import_one(
    host: PluginHost, timeout: float, cache: StartupCache | None, source: PluginSource
) -> Plugin | PluginError:
    """Import and assemble one deferred plugin on first use, as start-up does.

    The same steps (import under the patch guard, hook checks, hooks on a worker thread
    under ``timeout``, validation), with a plugin manager of its own: the oracle's is
    never changed while it serves. A plugin that now implements more than its cache
    entry said is refused (it changed since the oracle started).
    """
    assembler = _Assembler(new_plugin_manager(), host, timeout, cache)
    entry = _Entry(source)
    try:
        assembler.load([entry])
        assembler.register([entry])
        if entry.registered:
            impls = HookImpls(assembler.manager, ASSEMBLY_HOOKS)
            for results in assembler.call_all([entry], impls):
                assembler.build(entry, results)
    finally:
        assembler.worker.close()
    _report_imports([entry], host.settings.slow_import_seconds)
    if entry.failure is not None:
        return entry.failure
    extra = sorted(
        {(o.get("specname") or a) for a, o in entry.parsed.items() if o is not None}
        - DEFERRABLE_HOOKS
    )
    if entry.plugin is None or extra:
        return PluginLoadError(
            f"changed since the oracle started (it now implements {', '.join(extra)}): "
            "restart the oracle",
            plugin=source.name,
            distribution=source.distribution,
        )
    return entry.plugin


def _import_deferred(
    host: PluginHost, timeout: float, cache: Callable[[], StartupCache], source: PluginSource
) -> Plugin | PluginError:
    """Import a deferred plugin on first use, with a cache of its own entry alone."""
    return _import_one(host, timeout, cache(), source)


def _report_imports(entries: Sequence[_Entry], slow: float) -> None:
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


def declared_name(
    obj: Any, *, timeout: float = DEFAULT_HOOK_TIMEOUT, host: PluginHost | None = None
) -> str:
    """The name ``obj``'s manifest gives (valid or not), else its object's name.

    Calls its ``oracle_manifest`` through a scratch plugin manager, for tools that need a
    plugin's name before an oracle assembles it (``check_plugin`` writing its config);
    a manifest hook that asks for ``oracle`` gets ``host``.
    """
    source = source_for_object(obj)
    manager = new_plugin_manager()
    worker = HookWorker("oracle-manifest")
    results = HookResults()
    try:
        manager.register(obj)
        found = HookImpls(manager, ["oracle_manifest"]).of(obj, "oracle_manifest")
        results.results["oracle_manifest"] = worker.run(
            lambda _: call_plugin_hook(manager, "oracle_manifest", found, {"oracle": host}),
            timeout,
        )
    except Exception:
        return source.name  # assembly reports why
    finally:
        worker.close()
    return _declared_name(results, source)


def assemble(
    candidates: Sequence[Candidate],
    *,
    manager: pluggy.PluginManager,
    host: PluginHost,
    failures: Sequence[PluginError] = (),
    timeout: float | None = None,
    cache: bool = True,
) -> Registry:
    """Import, register, validate and resolve ``candidates`` into a :class:`Registry`.

    Assembly hooks run on a worker thread, one plugin after another; a hook that takes
    longer than ``timeout`` is reported as a failure of its plugin and the rest assembles.
    With ``host.settings.trace_plugins`` every hook call of ``manager`` from now on
    (assembly, startup, shutdown) is printed to stderr.

    Args:
        candidates: the plugins in registration order.
        manager: the oracle's plugin manager; failed plugins are unregistered from it.
        host: what assembly hooks that ask for ``oracle`` get; its settings give each
            plugin's configuration and the tracing switch.
        failures: failures found before assembly (e.g. unknown names in ORACLE_LOAD_PLUGINS).
        timeout: seconds each hook may take; default ``host.settings.hook_timeout``.
        cache: use the start-up cache under ``ORACLE_HOME`` for installed plugins
            (:mod:`oracle_core.plugins.cache`); plugins given in code are never cached.
    """
    assembler = _Assembler(
        manager,
        host,
        host.settings.hook_timeout if timeout is None else timeout,
        StartupCache(host.settings.home / "cache") if cache else None,
    )
    entries = [_Entry(c.source, c.obj) for c in candidates]
    try:
        pending = [e for e in entries if not assembler.defer(e)]
        assembler.load(pending)
        assembler.register(pending)
        # Registered first and indexed once: finding one plugin's implementations then
        # costs nothing, however many plugins there are.
        impls = HookImpls(manager, ASSEMBLY_HOOKS)
        ready = [e for e in pending if e.failure is None]
        for entry, results in zip(ready, assembler.call_all(ready, impls), strict=True):
            assembler.build(entry, results)
            assembler.remember(entry)
        if assembler.cache is not None:
            assembler.cache.save()
    finally:
        assembler.worker.close()
        if assembler.cache is not None:
            assembler.cache.release()  # its entries (and open file) must not outlive it
    found = [*failures, *(e.failure for e in entries if e.failure is not None)]
    kept = resolve([e.plugin for e in entries if e.plugin is not None], found)
    kept_ids = {id(p) for p in kept}
    for entry in entries:
        # A plugin left out must not run lifecycle hooks either. (pluggy's unregister scans
        # every hook implementation; plugins that fail are few, so this stays cheap.)
        if entry.registered and (entry.plugin is None or id(entry.plugin) not in kept_ids):
            manager.unregister(entry.obj)
    _report_imports(entries, host.settings.slow_import_seconds)
    kept_names = {p.name for p in kept}
    return Registry(
        plugins={p.name: p for p in kept},
        failures=found,
        warnings=[w for e in entries for w in e.warnings if w.plugin in kept_names],
    )
