"""Plugins may not patch the core: what decides which tools may run stays as it was shipped.

Python lets any imported module rebind another module's functions or a class's methods.
A plugin that did that to the gate, the run loop or the tool executor could get a hidden
tool run, and one that did it and then failed to load would leave the change behind. So
the loader takes a :class:`CoreSnapshot` of those modules before it imports plugins and
compares it after every batch of imports and of assembly hooks: any change is undone, and
the plugin that made it (traced as :mod:`~oracle_core.plugins.loader` describes) is left
out with an error that names what it changed. (This guards against accidents and casual
monkey-patching, the cases that break oracles in practice; Python code can always reach
further if it sets out to.)
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import operator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

_META_TOOLS = Path(__file__).resolve().parents[1] / "capabilities" / "meta_tools"


def _meta_tool_modules() -> tuple[str, ...]:
    """Every module of the meta-tools' package, read from its folder (not imported here).

    Each defines what a meta-tool shows and what answers its calls, so a new meta-tool's
    module is guarded without a row of its own below.
    """
    package = "oracle_core.capabilities.meta_tools"
    stems = sorted(p.stem for p in _META_TOOLS.glob("*.py") if p.stem != "__init__")
    return (package, *(f"{package}.{stem}" for stem in stems))


GUARDED_MODULES = (
    *_meta_tool_modules(),
    "oracle_core.capabilities.gate",
    "oracle_core.capabilities.state",
    "oracle_core.plugins.core_tools",
    "oracle_core.plugins.deferred",  # a deferred plugin's tools hand calls to the real ones
    "oracle_core.models.wire",  # reads the tool calls of a reply, which the gate checks
    "oracle_core.run.asking",  # records which tools reached the provider
    "oracle_core.run.begin",  # checks a caller's client tools and results before a run starts
    "oracle_core.run.calls",
    "oracle_core.run.chain",
    "oracle_core.run.executor",
    "oracle_core.run.gated",  # calls under the gate, through the middleware
    "oracle_core.run.client",  # which client tools may be offered beside the oracle's
    "oracle_core.run.waits.approvals",  # who must approve a call
    "oracle_core.run.waits.connections",
    "oracle_core.run.waits.resume",  # the gate asked again before a saved call runs
    "oracle_core.run.waits.cutoff",  # a cut-off run resumed: what is run again, what is not
    "oracle_core.run.waits.sweep",  # which cut-off runs are resumed, and by whom
    "oracle_core.run.waits.settle",  # a person's decision, recorded once
    "oracle_core.capabilities.surface",  # a specialist surface's tools
    "oracle_core.run.lease",
    "oracle_core.run.guards",  # usage limits and budgets: a run stopped before it spends
    "oracle_core.run.usage_limits",  # requests, tokens, tool calls and cost of one run
    "oracle_core.run.budgets",  # budgets per user and thread, across processes
    "oracle_core.run.plugin_calls",  # plugins' own model calls: in the ledger, under budgets
    "oracle_core.run.loop",
    "oracle_core.run.saving",  # the loop's saving and waiting, moved out of run.loop
    "oracle_core.run.turn",  # a new run's opening, moved out of run.loop
    "oracle_core.values.messages",
    "oracle_core.run.pool",
    "oracle_core.run.requests",
    "oracle_core.authoring.tools.tool",
    "oracle_core.authoring.tools.decorator",
    "oracle_core.authoring.tools.schema",
    "oracle_core.authoring.tools.signature",
    "oracle_core.authoring.tools.docstrings",
)
"""The modules whose functions and classes decide what the model is shown and what runs
(``tests/plugins/test_startup_patches.py`` checks that every module of ``run/``, ``capabilities/``
and ``authoring/tools/`` is here, but for those it names as deciding neither)."""

_MISSING = object()

_CACHES = frozenset({"__slotnames__"})
"""Attributes Python itself adds to a class on first use (``copyreg`` caches a class's slot
names there when an instance is first copied or pickled): no plugin's doing, never a patch."""


@dataclass(frozen=True)
class _Namespace:
    """One module's or class's attributes, by identity."""

    owner: Any
    label: str
    values: dict[str, Any]
    keys: tuple[str, ...] = ()
    objects: tuple[Any, ...] = ()

    @classmethod
    def of(cls, owner: Any, label: str) -> _Namespace:
        values = dict(vars(owner))
        return cls(owner, label, values, tuple(values), tuple(values.values()))

    def unchanged(self) -> bool:
        """Whether every attribute is the same object, in the same order (the usual case).

        Checked at C speed: assembly asks twice a plugin, so at thousands of plugins a
        Python loop over every attribute of every guarded namespace would dominate.
        Identity, not ``==``: an object that claims equality with anything must not hide
        a patch. A namespace that fails this is compared key by key.
        """
        now = vars(self.owner)
        return (
            len(now) == len(self.keys)
            and tuple(now) == self.keys
            and all(map(operator.is_, now.values(), self.objects))
        )


_VALUES = operator.methodcaller("values")


class CoreSnapshot:
    """The attributes of the guarded modules and of the classes they define, by identity."""

    def __init__(self, namespaces: list[_Namespace]) -> None:
        self._namespaces = namespaces
        # For the fast check of every namespace at once: their live attribute views (a
        # module's ``__dict__``, a class's mapping proxy), and the snapshot's sizes, keys
        # and objects, each flattened in one sequence.
        self._live = [vars(space.owner) for space in namespaces]
        self._sizes = [len(space.keys) for space in namespaces]
        self._keys = [key for space in namespaces for key in space.keys]
        self._objects = [value for space in namespaces for value in space.objects]

    def _unchanged(self) -> bool:
        """Whether no namespace changed, checked for all of them in a few C-level passes.

        The same test as :meth:`_Namespace.unchanged` for each (sizes, keys in order, and
        each attribute the same object), without a Python-level step per namespace.
        """
        live = self._live
        return (
            list(map(len, live)) == self._sizes
            and list(itertools.chain.from_iterable(live)) == self._keys
            and all(
                map(
                    operator.is_,
                    itertools.chain.from_iterable(map(_VALUES, live)),
                    self._objects,
                )
            )
        )

    @classmethod
    def take(cls) -> CoreSnapshot:
        """Record every guarded module's attributes and those of the classes it defines."""
        namespaces: list[_Namespace] = []
        for name in GUARDED_MODULES:
            module: ModuleType = importlib.import_module(name)
            namespaces.append(_Namespace.of(module, name))
            for attribute, value in vars(module).items():
                if inspect.isclass(value) and value.__module__ == name:
                    namespaces.append(_Namespace.of(value, f"{name}.{attribute}"))
        return cls(namespaces)

    def changes(self) -> list[str]:
        """The dotted names that were rebound, added or deleted since the snapshot."""
        if self._unchanged():
            return []
        found: list[str] = []
        for space in self._namespaces:
            if space.unchanged():
                continue
            now = vars(space.owner)
            for key in (space.values.keys() | now.keys()) - _CACHES:
                if now.get(key, _MISSING) is not space.values.get(key, _MISSING):
                    found.append(f"{space.label}.{key}")
        return sorted(found)

    def restore(self) -> None:
        """Undo every change: rebind what was rebound, put back what was deleted, drop additions."""
        for space in self._namespaces:
            now = vars(space.owner)
            for key in list((now.keys() | space.values.keys()) - _CACHES):
                before = space.values.get(key, _MISSING)
                if now.get(key, _MISSING) is before:
                    continue
                if before is _MISSING:
                    delattr(space.owner, key)
                else:
                    setattr(space.owner, key, before)
