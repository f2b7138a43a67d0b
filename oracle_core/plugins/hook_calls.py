"""Calling the plugins' assembly hooks: one plugin after another on a worker thread,
each hook under a timeout, the core checked for patches between them (see
:meth:`HookCalls.call_all`); a plugin's configuration is read right after its
``oracle_manifest``.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import pluggy

from oracle_core.authoring.host import PluginHost
from oracle_core.errors import PluginConfigError
from oracle_core.plugins.candidate import Entry
from oracle_core.plugins.config import load_plugin_config
from oracle_core.plugins.declared import manifest_config, manifest_name
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.hooks import ASSEMBLY_HOOKS, HookImpls, HookTrace, call_plugin_hook
from oracle_core.plugins.integrity import CoreSnapshot
from oracle_core.plugins.patch_guard import CHECK_EVERY, blame
from oracle_core.plugins.validate import HookResults
from oracle_core.plugins.worker import HookTimeout, HookWorker, Progress


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
class HookCalls:
    """Calls the assembly hooks of many plugins through one plugin manager.

    Args:
        manager: the plugin manager the plugins are registered with.
        host: what hooks that ask for ``oracle`` get; its settings give each plugin's
            configuration.
        timeout: seconds each hook may take.
        worker: the thread the hooks run on.
        core: the snapshot of the core the plugins must leave as it is.
        trace: labels each plugin once its manifest names it (``ORACLE_TRACE_PLUGINS``).
    """

    manager: pluggy.PluginManager
    host: PluginHost
    timeout: float
    worker: HookWorker
    core: CoreSnapshot
    trace: HookTrace | None

    def call_all(self, entries: Sequence[Entry], impls: HookImpls) -> list[HookResults]:
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
        entries: Sequence[Entry],
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
                        blame(entry, changed)
                    else:  # somebody since the last clean check: find who
                        state.careful_until = index + 1
                        index = state.checked
                        continue
            else:
                index += 1
                continue
            state.checked = index + 1
            index += 1

    def _check_one(self, entry: Entry, index: int, state: _Batch) -> None:
        """The check after one plugin called again: a change is its. So are the changes
        found when its hook timed out, unless a plugin called again before it made them."""
        changed = self.core.changes()
        if changed:
            self.core.restore()
            blame(entry, changed)
            state.unexplained.clear()  # explained
        elif found := state.unexplained.pop(index, None):
            blame(entry, found)

    def _call_hooks(
        self, entry: Entry, impls: HookImpls, progress: Progress, results: HookResults
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
                self.trace.label(entry.obj, manifest_name(results, entry.source))
        self._read_config(results, entry.source)

    def _read_config(self, results: HookResults, source: PluginSource) -> bool:
        """Read the plugin's configuration into ``results`` once; whether it is usable."""
        if results.config is None and results.config_error is None:
            name = manifest_name(results, source)
            settings = self.host.settings
            try:
                results.config = load_plugin_config(
                    name,
                    manifest_config(results),
                    settings.plugin_section(name),
                    settings.env,
                    settings.plugin_overrides,
                )
            except PluginConfigError as error:
                results.config_error = error
        return results.config_error is None
