"""How assembly keeps plugins from patching the core: checks in batches, and the blame.

The core (:class:`~oracle_core.plugins.integrity.CoreSnapshot`) is checked once every
:data:`CHECK_EVERY` plugins imported and once every :data:`CHECK_EVERY` plugins whose
assembly hooks ran. A change found is undone and traced to the plugin that made it, which
is left out naming what it changed (:func:`blame`): imports are traced here
(:func:`check_imports`, again in another process), hook calls by calling them again
(:mod:`~oracle_core.plugins.hook_calls`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from oracle_core.errors import PluginLoadError
from oracle_core.plugins.candidate import Entry
from oracle_core.plugins.integrity import CoreSnapshot
from oracle_core.plugins.patch_trace import trace_patches

log = logging.getLogger("oracle_core.plugins")

CHECK_EVERY = 64
"""Plugins imported, and plugins whose assembly hooks run, between two checks of the core
for patches. A change found is traced to its plugin (imports: again in another process;
hooks: called again, one plugin at a time, with a check after each): the usual start,
where no plugin patches anything, pays one check for this many plugins, not one each."""


def blame(entry: Entry, changed: Sequence[str]) -> None:
    """Leave the plugin out for ``changed`` (already undone), naming what it changed."""
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    entry.failure = PluginLoadError(
        f"changed oracle-core ({shown}); the change was undone and the plugin left out: "
        "a plugin may not patch the core, use middleware or hooks instead",
        plugin=entry.source.name,
        distribution=entry.source.distribution,
    )


def check_core(core: CoreSnapshot, *, plugin: str | None = None) -> list[str]:
    """Undo any change made to the core since ``core`` was taken; what changed (empty: nothing).

    Called around each tool call: before the gate decides on it (a thread a plugin started
    may have patched the core since the last check) and after it returns (``plugin``: the
    called tool's plugin, named as the one that made the change).
    """
    changed = core.changes()
    if not changed:
        return []
    core.restore()
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    if plugin is None:
        log.error("oracle-core was changed while the oracle ran (%s): undone", shown)
    else:
        log.error(
            "plugin %r: a tool call changed oracle-core (%s); the change was undone and the "
            "call's result dropped: a plugin may not patch the core",
            plugin,
            shown,
        )
    return changed


def check_imports(core: CoreSnapshot, batch: Sequence[Entry]) -> None:
    """Undo any change the imports of ``batch`` made to the core; whoever made one is
    left out, saying what (a plugin that failed to import included)."""
    changed = core.changes()
    if not changed:
        return
    core.restore()
    imported = [e for e in batch if e.import_seconds is not None]
    if not imported:  # nothing of this batch ran: another thread of the application
        log.warning("oracle-core was changed while plugins assembled (%s): undone", changed)
        return
    if len(imported) == 1:
        blame(imported[0], changed)
        return
    seconds = sum(e.import_seconds or 0.0 for e in imported)
    traced = trace_patches([e.source.value for e in imported], timeout=max(60.0, 4 * seconds))
    if traced is None:
        traced = [[] for _ in imported]
    named = [(e, names) for e, names in zip(imported, traced, strict=True) if names]
    for entry, names in named:
        blame(entry, names)
    if not named:
        log.warning(
            "a plugin changed oracle-core when imported (%s); the change was undone, but "
            "importing them again one at a time did not show whose it was: one of %s",
            ", ".join(changed[:5]),
            ", ".join(e.source.name for e in imported),
        )
