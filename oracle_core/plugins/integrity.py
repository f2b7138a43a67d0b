"""Plugins may not patch the core: what decides which tools may run stays as it was shipped.

Python lets any imported module rebind another module's functions or a class's methods,
or swap a function's code object or defaults in place. A plugin that did that to the gate,
the run loop or the tool executor could get a hidden tool run, and one that did it and
then failed to load would leave the change behind. So the loader takes a
:class:`CoreSnapshot` of those modules before it imports plugins and compares it after
every batch of imports, after each assembly and startup hook and after each tool call
returns: any change is undone, and the plugin that made it (traced as
:mod:`~oracle_core.plugins.loader` describes) is left out with an error that names what it
changed.

What is compared: every attribute of each guarded module and of each class it defines
(rebound, added or deleted, by identity), and every function found there by its code
object, its defaults and its keyword defaults. The guarded modules are every module of the
packages in :data:`GUARDED_PACKAGES`, read from their folders, but for those
:data:`NOT_GUARDED` names with a reason, plus :data:`GUARDED_EXTRA`.

What it cannot promise: a plugin runs in the oracle's process, so this catches accidents
and careless plugins, not a determined one. A change made between two checks (by a thread
a plugin started) is found and undone at the next check, not prevented; state reached
through other objects (the interpreter's builtins, a library's module, an instance's own
attributes) is not compared. The checks themselves run from a private copy of this
module's functions and globals taken with the snapshot, so patching this module does not
turn them off.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import itertools
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]

GUARDED_PACKAGES = (
    "oracle_core.run",
    "oracle_core.capabilities",
    "oracle_core.authoring.tools",
    "oracle_core.plugins",
)
"""Packages every module of which is guarded (subpackages included), but for
:data:`NOT_GUARDED`."""

NOT_GUARDED: dict[str, str] = {
    "oracle_core.run.locks": "in-process locks of threads: they decide no tool",
    "oracle_core.run.threads": "the thread cache: it holds what the store holds",
    "oracle_core.run.deps": "a value: the parts a run uses",
    "oracle_core.run.state": "a value: what a run changes",
    "oracle_core.run.opening": "answers a dead run's calls as interrupted; runs none",
    "oracle_core.run.waits.opening": "answers the calls of settled operations; runs none",
    "oracle_core.run.waits.background": "runs only calls the executor started, past the gate",
    "oracle_core.capabilities.prompt": "the Tier-1 block's text",
    "oracle_core.run.output": "checks a final answer's JSON; runs no tool",
    "oracle_core.run.observe": "observers watch a run's events; they decide nothing",
    "oracle_core.capabilities.search": "ranks plugins for a search; the gate decides",
    "oracle_core.plugins.mcp": "an MCP server's tools are a plugin's, gated as any (imported "
    "only when configured)",
    "oracle_core.plugins.worker": "a thread that runs hooks; it decides nothing",
    "oracle_core.plugins.stamps": "file stamps of the start-up cache",
    "oracle_core.plugins.where": "where a failure happened, for its message",
}
"""Modules (or whole subpackages) of :data:`GUARDED_PACKAGES` that decide neither what is
shown nor what runs, each with its reason (each guarded module costs every check a few
microseconds)."""

GUARDED_EXTRA = (
    "oracle_core.models.wire",  # reads the tool calls of a reply, which the gate checks
    "oracle_core.values.messages",  # the calls and results the gate and executor read
)
"""Guarded modules outside :data:`GUARDED_PACKAGES`."""


def _excluded(name: str) -> bool:
    return any(name == n or name.startswith(n + ".") for n in NOT_GUARDED)


def _modules_of(package: str) -> list[str]:
    """Every module of ``package``, read from its folder (nothing is imported here)."""
    folder = _ROOT.joinpath(*package.split(".")[1:])
    found: list[str] = []
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join((package, *parts))
        if not _excluded(name):
            found.append(name)
    return found


def guarded_modules() -> tuple[str, ...]:
    """The names of the guarded modules: :data:`GUARDED_PACKAGES`' and :data:`GUARDED_EXTRA`."""
    return (*(m for p in GUARDED_PACKAGES for m in _modules_of(p)), *GUARDED_EXTRA)


GUARDED_MODULES = guarded_modules()
"""The modules whose functions and classes decide what the model is shown and what runs."""

_MISSING = object()

_CACHES = frozenset({"__slotnames__"})
"""Attributes Python itself adds to a class on first use (``copyreg`` caches a class's slot
names there when an instance is first copied or pickled): no plugin's doing, never a patch."""

_IS = operator.is_
_CHAIN = itertools.chain.from_iterable
_VALUES = operator.methodcaller("values")
_CODE = operator.attrgetter("__code__")
_DEFAULTS = operator.attrgetter("__defaults__")
_KWDEFAULTS = operator.attrgetter("__kwdefaults__")


def _benign(owner: Any, key: str, value: Any) -> bool:
    """Whether an attribute added to ``owner`` is Python's own doing: a cache, or a package's
    submodule imported after the snapshot."""
    if key in _CACHES:
        return True
    return (
        isinstance(owner, ModuleType)
        and isinstance(value, ModuleType)
        and value.__name__ == f"{owner.__name__}.{key}"
    )


def _functions(value: Any) -> list[FunctionType]:
    """The Python functions an attribute holds: itself, a static or class method's, a
    property's getter, setter and deleter."""
    if isinstance(value, FunctionType):
        return [value]
    if isinstance(value, (staticmethod, classmethod)):
        return _functions(value.__func__)
    if isinstance(value, property):
        return [f for f in (value.fget, value.fset, value.fdel) if isinstance(f, FunctionType)]
    return []


@dataclass(frozen=True)
class _Namespace:
    """One module's or class's attributes, by identity."""

    owner: Any
    label: str
    values: dict[str, Any]
    keys: tuple[str, ...] = ()
    objects: tuple[Any, ...] = ()


def _namespace(owner: Any, label: str) -> _Namespace:
    values = dict(vars(owner))
    return _Namespace(owner, label, values, tuple(values), tuple(values.values()))


def _same(space: _Namespace) -> bool:
    """Whether every attribute is the same object, in the same order (the usual case).

    Identity, not ``==``: an object that claims equality with anything must not hide a
    patch. A namespace that fails this is compared key by key.
    """
    now = vars(space.owner)
    return (
        len(now) == len(space.keys)
        and tuple(now) == space.keys
        and all(map(_IS, now.values(), space.objects))
    )


@dataclass(frozen=True)
class _Function:
    """One guarded function's code, defaults and keyword defaults (their items too)."""

    function: FunctionType
    label: str
    code: types.CodeType
    defaults: tuple[Any, ...] | None
    kwdefaults: dict[str, Any] | None
    kwitems: tuple[tuple[str, Any], ...]


def _function(function: FunctionType, label: str) -> _Function:
    kw = function.__kwdefaults__
    items = tuple(kw.items()) if kw else ()
    return _Function(function, label, function.__code__, function.__defaults__, kw, items)


def _function_changes(record: _Function) -> list[str]:
    """What changed in one function: its code, defaults or keyword defaults."""
    f, found = record.function, []
    if f.__code__ is not record.code:
        found.append(f"{record.label}.__code__")
    if f.__defaults__ is not record.defaults:
        found.append(f"{record.label}.__defaults__")
    kw = f.__kwdefaults__
    now = tuple(kw.items()) if kw else ()
    if (
        kw is not record.kwdefaults
        or len(now) != len(record.kwitems)
        or not all(a[0] == b[0] and a[1] is b[1] for a, b in zip(now, record.kwitems, strict=True))
    ):
        found.append(f"{record.label}.__kwdefaults__")
    return found


def _function_restore(record: _Function) -> None:
    f = record.function
    f.__code__ = record.code
    f.__defaults__ = record.defaults
    if record.kwdefaults is not None:
        record.kwdefaults.clear()
        record.kwdefaults.update(record.kwitems)
    f.__kwdefaults__ = record.kwdefaults


_NOT_CONTENTS = frozenset({"__builtins__", "__path__"})
"""Containers whose contents Python or a session changes itself (``builtins._`` in a REPL; a
namespace package's path): their rebinding is compared, their contents not."""

_CONTAINERS = (dict, list, set)
"""Mutable containers whose contents are compared too (a plugin could change one in place)."""


def _contents(container: Any) -> tuple[Any, ...]:
    """A container's contents, flat: a dict's keys and values in turn, a list's or set's items."""
    if isinstance(container, dict):
        return tuple(_CHAIN(container.items()))
    return tuple(container)


def _containers(value: Any, label: str, found: dict[int, tuple[Any, str]], depth: int = 0) -> None:
    """Every mutable container in ``value`` (itself, and nested ones, a few levels deep)."""
    if not isinstance(value, _CONTAINERS) or id(value) in found or depth > 4:
        return
    found[id(value)] = (value, label)
    items = value.items() if isinstance(value, dict) else ((i, v) for i, v in enumerate(value))
    for key, item in items:
        _containers(item, f"{label}[{key!r}]", found, depth + 1)


def _private(function: FunctionType, names: dict[str, Any]) -> FunctionType:
    """A copy of ``function`` that runs from ``names``, not from its module's globals."""
    copy = FunctionType(
        function.__code__, names, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    return copy


class CoreSnapshot:
    """The guarded modules' attributes and those of their classes, by identity, and the
    code and defaults of every function found there.

    :meth:`changes` and :meth:`restore` run from private copies of this module's functions
    and globals (builtins included), taken with the snapshot: rebinding, or swapping the
    code of, anything in this module afterwards does not change what they do.
    """

    # Set by _index: the flattened snapshot the fast check compares.
    _live: list[Any]
    _live_keys: list[Any]
    _live_values: list[Any]
    _sizes: list[int]
    _keys: list[str]
    _objects: list[Any]
    _fns: list[FunctionType]
    _codes: list[types.CodeType]
    _defaults: list[tuple[Any, ...] | None]
    _kwdefaults: list[dict[str, Any] | None]
    _kw_live: list[dict[str, Any]]
    _kw_sizes: list[int]
    _kw_keys: list[str]
    _kw_values: list[Any]
    _held: list[Any]
    _held_sizes: list[int]
    _held_items: list[Any]

    def __init__(
        self,
        namespaces: list[_Namespace],
        functions: list[_Function],
        containers: list[tuple[Any, str]] = [],  # noqa: B006 (never changed)
    ) -> None:
        self._namespaces = namespaces
        self._functions = functions
        self._containers = [(c, label, _contents(c)) for c, label in containers]
        _index(self)
        names = dict(globals())
        names["__builtins__"] = dict(vars(builtins))
        for key, value in list(names.items()):
            if isinstance(value, FunctionType) and value.__module__ == __name__:
                names[key] = _private(value, names)
        self.changes: Callable[[], list[str]] = types.MethodType(names["_changes"], self)
        self.restore: Callable[[], None] = types.MethodType(names["_restore"], self)

    @classmethod
    def take(cls) -> CoreSnapshot:
        """Record every guarded module's attributes and those of the classes it defines."""
        namespaces: list[_Namespace] = []
        functions: dict[int, _Function] = {}
        containers: dict[int, tuple[Any, str]] = {}
        # All imported first: importing a submodule adds it to its package's attributes.
        modules: list[ModuleType] = [importlib.import_module(n) for n in GUARDED_MODULES]
        for name, module in zip(GUARDED_MODULES, modules, strict=True):
            owners: list[tuple[Any, str]] = [(module, name)]
            for attribute, value in vars(module).items():
                if inspect.isclass(value) and value.__module__ == name:
                    owners.append((value, f"{name}.{attribute}"))
            for owner, label in owners:
                namespaces.append(_namespace(owner, label))
                for key, value in vars(owner).items():
                    for function in _functions(value):
                        functions.setdefault(id(function), _function(function, f"{label}.{key}"))
                    if key not in _NOT_CONTENTS:
                        _containers(value, f"{label}.{key}", containers)
        return cls(namespaces, list(functions.values()), list(containers.values()))


def _index(self: CoreSnapshot) -> None:
    """Flatten the snapshot for :func:`_unchanged`: the namespaces' live key and value views,
    their sizes, keys and objects, and the functions with their code and defaults (and the
    same for the few keyword-default dicts)."""
    spaces = self._namespaces
    live = [vars(space.owner) for space in spaces]
    self._live = live
    self._live_keys = [names.keys() for names in live]
    self._live_values = [names.values() for names in live]
    self._sizes = [len(space.keys) for space in spaces]
    self._keys = [key for space in spaces for key in space.keys]
    self._objects = [value for space in spaces for value in space.objects]
    functions = self._functions
    self._fns = [f.function for f in functions]
    self._codes = [f.code for f in functions]
    self._defaults = [f.defaults for f in functions]
    self._kwdefaults = [f.kwdefaults for f in functions]
    keyword = [f for f in functions if f.kwdefaults is not None]
    self._kw_live = [f.kwdefaults for f in keyword if f.kwdefaults is not None]
    self._kw_sizes = [len(f.kwitems) for f in keyword]
    self._kw_keys = [key for f in keyword for key, _ in f.kwitems]
    self._kw_values = [value for f in keyword for _, value in f.kwitems]
    self._held = [c for c, _, _ in self._containers]
    self._held_sizes = [len(items) for _, _, items in self._containers]
    self._held_items = [item for _, _, items in self._containers for item in items]


def _unchanged(self: CoreSnapshot) -> bool:
    """Whether nothing changed, checked for every namespace and function in a few C-level
    passes, without a Python-level step per namespace or function."""
    fns, kw = self._fns, self._kw_live
    return (
        list(map(len, self._live)) == self._sizes
        and list(_CHAIN(self._live_keys)) == self._keys
        and all(map(_IS, _CHAIN(self._live_values), self._objects))
        and all(map(_IS, map(_CODE, fns), self._codes))
        and all(map(_IS, map(_DEFAULTS, fns), self._defaults))
        and all(map(_IS, map(_KWDEFAULTS, fns), self._kwdefaults))
        and list(map(len, kw)) == self._kw_sizes
        and list(_CHAIN(kw)) == self._kw_keys
        and all(map(_IS, _CHAIN(map(_VALUES, kw)), self._kw_values))
        and list(map(len, map(_contents, self._held))) == self._held_sizes
        and all(map(_IS, _CHAIN(map(_contents, self._held)), self._held_items))
    )


def _changes(self: CoreSnapshot) -> list[str]:
    """The dotted names that were rebound, added or deleted since the snapshot, and the
    functions whose code or defaults changed (``....__code__``)."""
    if _unchanged(self):
        return []
    found: list[str] = []
    benign = False
    for space in self._namespaces:
        now = vars(space.owner)
        for key in space.values.keys() | now.keys():
            value = now.get(key, _MISSING)
            if value is space.values.get(key, _MISSING):
                continue
            if key not in space.values and _benign(space.owner, key, value):
                benign = True
                continue
            found.append(f"{space.label}.{key}")
    for container, label, items in self._containers:
        now = _contents(container)
        if len(now) != len(items) or not all(map(_IS, now, items)):
            found.append(f"{label} (its contents)")
    for function in self._functions:
        found.extend(_function_changes(function))
    if benign and not found:  # take in what Python added, so the next check is fast again
        self._namespaces = [
            s if _same(s) else _namespace(s.owner, s.label) for s in self._namespaces
        ]
        _index(self)
    return sorted(found)


def _restore(self: CoreSnapshot) -> None:
    """Undo every change: rebind what was rebound, put back what was deleted, drop additions,
    and put back each function's code and defaults."""
    for space in self._namespaces:
        now = vars(space.owner)
        for key in list(now.keys() | space.values.keys()):
            before = space.values.get(key, _MISSING)
            value = now.get(key, _MISSING)
            if value is before:
                continue
            if before is _MISSING:
                if not _benign(space.owner, key, value):
                    delattr(space.owner, key)
            else:
                setattr(space.owner, key, before)
    for container, _, items in self._containers:
        now = _contents(container)
        if len(now) == len(items) and all(map(_IS, now, items)):
            continue
        container.clear()
        if isinstance(container, dict):
            container.update(zip(items[::2], items[1::2], strict=True))
        elif isinstance(container, list):
            container.extend(items)
        else:
            container.update(items)
    for function in self._functions:
        if _function_changes(function):
            _function_restore(function)
