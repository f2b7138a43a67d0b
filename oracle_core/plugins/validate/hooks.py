"""Problems of a plugin's hook implementations, found before the plugin is registered.

Unknown hooks, parameters a hook does not pass, assembly hooks written ``async``, and
wrappers that would wrap nothing: the shape of the hooks, not what they return.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import types
from typing import Any

import pluggy

from oracle_core.plugins.hooks import (
    ASSEMBLY_HOOKS,
    EXPORT_HOOKS,
    HOOK_NAMES,
    LIFECYCLE_HOOKS,
    parse_hookimpl,
)
from oracle_core.plugins.validate.problems import Problem


def hook_problems(
    manager: pluggy.PluginManager, plugin: object, parsed: dict[str, Any] | None = None
) -> list[Problem]:
    """What the core cannot honour in ``plugin``'s hook implementations.

    Read from the plugin object with ``manager.parse_hookimpl_opts`` (what pluggy's own
    ``register`` uses), before the plugin is registered: unknown hooks (with the closest
    real one), parameters a hook does not pass, assembly hooks written ``async``, and
    wrappers that would wrap nothing. Each plugin's hooks are called on their own, so a
    ``wrapper=True`` implementation wraps its own plugin's implementations of the hook.
    A hook named by a problem's ``hook`` is not called.

    ``parsed``, if given, receives what ``parse_hookimpl_opts`` returned for each attribute
    read, so that registering the plugin need not parse them again.
    """
    found: list[Problem] = []
    impls: dict[str, list[tuple[str, Any, dict[str, Any]]]] = {}
    for attr in dir(plugin):
        dunder = attr.startswith("__") and attr.endswith("__")
        if dunder and parsed is None:
            continue  # Python's own names (a class object has dozens): never a hook
        opts = parse_hookimpl(manager, plugin, attr)
        if parsed is not None:
            parsed[attr] = opts
        if opts is None or dunder:
            continue
        options: dict[str, Any] = dict(opts)
        hook = options.get("specname") or attr
        if hook not in HOOK_NAMES:
            close = difflib.get_close_matches(hook, HOOK_NAMES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            via = f" (specname of {attr!r})" if options.get("specname") else ""
            found.append(
                Problem(
                    f"implements unknown hook {hook!r}{via}{hint}; "
                    f"the hooks are: {', '.join(HOOK_NAMES)}"
                )
            )
            continue
        impls.setdefault(hook, []).append((attr, getattr(plugin, attr), options))
    for hook, group in impls.items():
        spec = getattr(manager.hook, hook).spec
        offered = list(spec.argnames) if spec is not None else []
        own: list[Problem] = []
        for attr, function, options in group:
            own += _signature_problems(hook, attr, function, offered, options)
        own += _wrapper_problems(hook, group)
        found += [dataclasses.replace(p, hook=hook) for p in own]
    return found


def _signature_problems(
    hook: str, attr: str, function: Any, offered: list[str], options: dict[str, Any]
) -> list[Problem]:
    where = f"hook {hook} ({attr!r})" if attr != hook else f"hook {hook}"
    found: list[Problem] = []
    parameters = _named_parameters(function)
    if parameters is None:
        return [Problem(f"{where} is not a function: decorate a plain function with @hookimpl")]
    for name, has_default in parameters:
        if name not in offered:
            passes = ", ".join(offered) or "nothing"
            found.append(
                Problem(
                    f"{where} asks for {name!r}, which {hook} does not pass (it "
                    f"passes: {passes}): rename or remove the parameter"
                )
            )
        elif has_default:
            found.append(
                Problem(
                    f"{where} gives {name!r} a default, so pluggy never passes it: "
                    "remove the default"
                )
            )
    wraps = options.get("wrapper") or options.get("hookwrapper")
    if hook in ASSEMBLY_HOOKS and not wraps and inspect.iscoroutinefunction(function):
        found.append(
            Problem(
                f"{where} is async, but assembly hooks are called synchronously: make it a "
                "plain def (open connections in oracle_startup, which may be async)"
            )
        )
    if hook in EXPORT_HOOKS and not wraps and inspect.iscoroutinefunction(function):
        found.append(
            Problem(
                f"{where} is async, but {hook} is called synchronously: make it a plain def "
                "(the render or read functions it returns may be async)"
            )
        )
    return found


def _named_parameters(function: Any) -> list[tuple[str, bool]] | None:
    """Each named parameter of ``function`` (not ``*args``/``**kwargs``), and whether it has
    a default; ``None`` when it has no signature.

    A plain function's are read off its code object, as ``inspect.signature`` reads them
    (which costs tens of microseconds a call, two hooks a plugin, thousands of plugins);
    anything else (bound methods, wrapped or decorated callables) goes through
    ``inspect.signature``.
    """
    if (
        type(function) is types.FunctionType
        and not hasattr(function, "__wrapped__")
        and not hasattr(function, "__signature__")
    ):
        code = function.__code__
        positional = code.co_varnames[: code.co_argcount]
        keyword = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
        defaults = len(function.__defaults__ or ())
        given = function.__kwdefaults__ or {}
        first_default = len(positional) - defaults
        return [(n, i >= first_default) for i, n in enumerate(positional)] + [
            (n, n in given) for n in keyword
        ]
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    return [
        (p.name, p.default is not p.empty)
        for p in parameters
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def _wrapper_problems(hook: str, group: list[tuple[str, Any, dict[str, Any]]]) -> list[Problem]:
    found: list[Problem] = []
    plain = [function for _, function, options in group if not _wraps(options)]
    for attr, function, options in group:
        if not _wraps(options):
            continue
        where = f"hook {hook} ({attr!r})" if attr != hook else f"hook {hook}"
        if options.get("wrapper") and options.get("hookwrapper"):
            found.append(
                Problem(f"{where} sets both wrapper=True and hookwrapper=True: keep wrapper=True")
            )
        if not inspect.isgeneratorfunction(function):
            found.append(
                Problem(
                    f"{where} is a wrapper but not a generator function: `yield` once to let "
                    "the plugin's own implementation run, or drop wrapper=True"
                )
            )
        if not plain:
            found.append(
                Problem(
                    f"{where} is a wrapper with nothing to wrap: the core calls each plugin's "
                    "hooks on their own, so a wrapper wraps only its own plugin's "
                    f"implementations of {hook}; add a plain @hookimpl {hook}, or drop "
                    "wrapper=True"
                )
            )
        elif hook in LIFECYCLE_HOOKS and any(inspect.iscoroutinefunction(f) for f in plain):
            found.append(
                Problem(
                    f"{where} wraps an async implementation, which the core awaits only "
                    "after the wrapper has finished: make the wrapped implementation a plain "
                    "def, or drop the wrapper"
                )
            )
    return found


def _wraps(options: dict[str, Any]) -> bool:
    return bool(options.get("wrapper") or options.get("hookwrapper"))
