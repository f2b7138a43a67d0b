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

The steps have modules of their own: the record of a plugin on its way
(:mod:`~oracle_core.plugins.candidate`), its import (:mod:`~oracle_core.plugins.importing`),
the patch guard (:mod:`~oracle_core.plugins.patch_guard`), the hook calls
(:mod:`~oracle_core.plugins.hook_calls`) and what a manifest declares before it is
validated (:mod:`~oracle_core.plugins.declared`); this module runs them in order.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence

import pluggy

from oracle_core.authoring.host import PluginHost
from oracle_core.authoring.manifest import PluginManifest
from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import PluginConfigError, PluginError, PluginLoadError
from oracle_core.plugins.cache import StartupCache
from oracle_core.plugins.candidate import Candidate, Entry, source_for_object
from oracle_core.plugins.config import load_plugin_config
from oracle_core.plugins.declared import declared_name
from oracle_core.plugins.deferred import (
    DEFERRABLE_HOOKS,
    DeferredImport,
    config_digest,
    deferral_record,
    deferred_plugin,
)
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.hook_calls import HookCalls
from oracle_core.plugins.hooks import (
    ASSEMBLY_HOOKS,
    HookImpls,
    HookTrace,
    new_plugin_manager,
    register_plugins,
)
from oracle_core.plugins.importing import import_all, import_times, report_imports
from oracle_core.plugins.integrity import CoreSnapshot
from oracle_core.plugins.patch_guard import CHECK_EVERY, check_imports
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
from oracle_core.plugins.worker import HookWorker

# Candidate, declared_name, import_times, source_for_object and CHECK_EVERY moved to the
# modules of their steps; they are still imported from here (docs, tests, the CLI).
__all__ = [
    "CHECK_EVERY",
    "Candidate",
    "assemble",
    "declared_name",
    "import_times",
    "new_plugin_manager",
    "source_for_object",
]


class _Assembler:
    """One assembly's plugin manager, host, cache, worker thread and core snapshot."""

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
        self.calls = HookCalls(manager, host, timeout, self.worker, self.core, self.trace)

    def load(self, entries: Sequence[Entry]) -> None:
        """Import the plugins in order and find what the core cannot honour in their hooks.

        The core is checked for patches once every :data:`CHECK_EVERY` imports. A change
        found is undone, and traced to the plugins that made it by importing them again,
        one at a time, in another process (:mod:`~oracle_core.plugins.patch_trace`).
        """
        for start in range(0, len(entries), CHECK_EVERY):
            batch = entries[start : start + CHECK_EVERY]
            import_all(self.worker, batch, self.timeout, traced=self.trace is not None)
            check_imports(self.core, batch)
            for entry in batch:
                if entry.failure is None:
                    entry.registration = hook_problems(self.manager, entry.obj, entry.parsed)

    def defer(self, entry: Entry) -> bool:
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

    def remember(self, entry: Entry) -> None:
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

    def register(self, entries: Sequence[Entry]) -> None:
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

    def build(self, entry: Entry, results: HookResults) -> None:
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

    def _plugin(self, entry: Entry, checked: Validation) -> Plugin:
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
    entry = Entry(source)
    try:
        assembler.load([entry])
        assembler.register([entry])
        if entry.registered:
            impls = HookImpls(assembler.manager, ASSEMBLY_HOOKS)
            for results in assembler.calls.call_all([entry], impls):
                assembler.build(entry, results)
    finally:
        assembler.worker.close()
    report_imports([entry], host.settings.slow_import_seconds)
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
    entries = [Entry(c.source, c.obj) for c in candidates]
    try:
        pending = [e for e in entries if not assembler.defer(e)]
        assembler.load(pending)
        assembler.register(pending)
        # Registered first and indexed once: finding one plugin's implementations then
        # costs nothing, however many plugins there are.
        impls = HookImpls(manager, ASSEMBLY_HOOKS)
        ready = [e for e in pending if e.failure is None]
        for entry, results in zip(ready, assembler.calls.call_all(ready, impls), strict=True):
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
    report_imports(entries, host.settings.slow_import_seconds)
    kept_names = {p.name for p in kept}
    return Registry(
        plugins={p.name: p for p in kept},
        failures=found,
        warnings=[w for e in entries for w in e.warnings if w.plugin in kept_names],
        core=assembler.core,
    )
