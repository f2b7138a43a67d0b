"""What a plugin's assembly hooks gave, and the problems of its shape.

A hook that raised, returned something other than a list of the right kind, or did not
return in time; what the items are worth is checked by the other modules of the validator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import PluginConfigError
from oracle_core.plugins.hooks import ASSEMBLY_HOOKS
from oracle_core.plugins.validate.problems import Problem
from oracle_core.plugins.worker import HookTimeout


@dataclass
class HookResults:
    """What one plugin's assembly hooks gave, as the loader collected it.

    Attributes:
        results: each called hook's results (one per implementation that returned
            something other than ``None``).
        raised: the exception each hook raised instead.
        timed_out: the hook that did not return in time (later hooks were not called).
        config: the plugin's configuration as its hooks got it (its config model's
            instance, or a dict), read right after ``oracle_manifest``.
        config_error: why its configuration could not be read (later hooks were then
            not called).
    """

    results: dict[str, list[Any]] = field(default_factory=dict)
    raised: dict[str, BaseException] = field(default_factory=dict)
    timed_out: HookTimeout | None = None
    config: Any = None
    config_error: PluginConfigError | None = None


def listed(results: HookResults, hook: str, kind: type, errors: list[Problem]) -> list[Any]:
    """The ``kind`` items ``hook`` returned; a raise, a non-list or a wrong item is added to
    ``errors`` instead."""
    error = results.raised.get(hook)
    if error is not None:
        errors.append(Problem(f"hook {hook} raised {type(error).__name__}: {error}"))
        return []
    items: list[Any] = []
    for result in results.results.get(hook, []):
        if not isinstance(result, list | tuple):
            errors.append(
                Problem(
                    f"hook {hook} returned {type(result).__name__}: return a list of "
                    f"{kind.__name__}"
                )
            )
            continue
        for item in result:
            if isinstance(item, kind):
                items.append(item)
                continue
            hint = " (decorate the function with @tool)" if kind is Tool and callable(item) else ""
            errors.append(
                Problem(
                    f"hook {hook} returned a {type(item).__name__} where a {kind.__name__} "
                    f"belongs{hint}"
                )
            )
    return items


def timeout_problem(timed_out: HookTimeout) -> Problem:
    """The error of a hook that did not return in time, naming the hooks left uncalled."""
    hook = timed_out.hook
    return Problem(
        f"{timed_out}: it is left out (raise ORACLE_HOOK_TIMEOUT if it needs "
        f"longer, or do the slow part lazily, e.g. in oracle_startup or the first "
        f"tool call){_not_called(hook)}"
    )


def _not_called(hook: str) -> str:
    later = ASSEMBLY_HOOKS[ASSEMBLY_HOOKS.index(hook) + 1 :] if hook in ASSEMBLY_HOOKS else ()
    return f"; {', '.join(later)} were not called" if later else ""
