"""The conformance check a plugin author runs in one line: ``check_plugin(my_plugin)``.

It checks what the core and the model rely on, and lists every problem at once:

- everything the plugin validator checks when an oracle assembles the plugin (its hooks,
  manifest, tools and examples; :mod:`oracle_core.plugins.validate`), with the
  same messages, and its soft-limit warnings counted as problems too;
- that it starts (its ``oracle_startup`` returns in time);
- every tool's parameters are valid JSON Schema (the slow check assembly leaves out);
- an ``always`` plugin's Tier-1 entry fits a token budget;
- the capability gate, exercised for real through a scripted model: on-demand
  tools are hidden until loaded, a call to one before ``load_capability`` is refused and the
  tool's function is never entered, ``load_capability`` works and the tools show on the
  very next model call, ``always`` and ``silent`` tools show from the first call, and a
  silent plugin is never listed.

The gate half lives in :mod:`oracle_core.testing.gate_check`. Tool functions are never run:
a probe middleware answers for them and records each call, so a check makes no network
call and changes nothing.
"""

from __future__ import annotations

import tempfile
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from oracle_core.authoring.host import PluginHost, PluginStates
from oracle_core.capabilities.prompt import tier1_entry
from oracle_core.oracle import Oracle
from oracle_core.plugins.loader import declared_name, source_for_object
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.plugins.validate import deep_tool_problems
from oracle_core.settings import Settings
from oracle_core.store import MemoryCheckpointer
from oracle_core.testing.gate_check import GateCheck, Probe
from oracle_core.testing.harness import import_plugin, run_sync, write_config
from oracle_core.testing.scripted import ScriptedModel
from oracle_core.values.tokens import count_tokens

DEFAULT_TIER1_ENTRY_BUDGET = 80
"""Tokens one ``always`` plugin's Tier-1 entry may cost (the whole block's default is 400)."""


class ConformanceError(AssertionError):
    """A plugin failed the conformance check.

    Attributes:
        plugin: the plugin's name.
        problems: every problem found, each naming the field or tool at fault.
    """

    def __init__(self, plugin: str, problems: list[str]) -> None:
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"plugin {plugin!r} fails {len(problems)} conformance check(s):\n{lines}")
        self.plugin = plugin
        self.problems = problems


def check_plugin(
    plugin: Any,
    *,
    config: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    dependencies: Sequence[Any] = (),
    tier1_budget: int = DEFAULT_TIER1_ENTRY_BUDGET,
) -> None:
    """Check that ``plugin`` conforms to what oracle-core and the model rely on.

    Works from sync and async tests alike (it runs its own event loop in a worker thread
    when the caller's is running); the first check in a process pays litellm's import.

    Args:
        plugin: the plugin module or object, or its dotted module name.
        config: the plugin's settings (its ``[plugins.<name>]`` table).
        env: environment variables the oracle's settings read (nothing from ``os.environ``).
        dependencies: plugins it ``depends_on``, registered before it.
        tier1_budget: tokens an ``always`` plugin's Tier-1 entry may cost.

    Raises:
        ConformanceError: an ``AssertionError`` listing every problem, naming the plugin and
            the manifest field or tool at fault.
    """
    __tracebackhide__ = True
    name, problems = run_sync(
        _check(import_plugin(plugin), config, env, dependencies, tier1_budget)
    )
    if problems:
        raise ConformanceError(name, problems)


async def _check(
    obj: Any,
    config: Mapping[str, Any] | None,
    env: Mapping[str, str] | None,
    dependencies: Sequence[Any],
    budget: int,
) -> tuple[str, list[str]]:
    with tempfile.TemporaryDirectory(prefix="oracle-conformance-") as home:
        settings = Settings.from_env({"ORACLE_HOME": home, **(env or {})})
        name = declared_name(obj, host=PluginHost(settings, PluginStates()))
        if config:
            write_config(settings.home, {name: config})
        probe = Probe()
        with ScriptedModel(name="conformance") as model:
            oracle = Oracle(
                [*(import_plugin(d) for d in dependencies), obj, probe],
                entry_points=False,
                settings=settings,
                model=model,
                checkpointer=MemoryCheckpointer(),
            )
            gate = GateCheck(probe)
            problems: list[str] = []
            try:
                await oracle.start()
                registry = oracle.registry
                problems += _failures(registry, {name, source_for_object(obj).name})
                plugin = next((p for p in registry if p.obj is obj), None)
                if plugin is not None:
                    problems += [w.message for w in registry.warnings if w.plugin == plugin.name]
                    problems += [p.message for p in deep_tool_problems(plugin.tools)]
                    problems += _tier1(plugin, budget)
                    await gate.converse(oracle, model, plugin)
                elif not problems:
                    problems.append("assembly: the plugin was left out of the oracle")
            except Exception as error:  # a plugin broken in a way no check foresaw
                problems.append(f"the check could not finish: {type(error).__name__}: {error}")
            finally:
                await oracle.close()
        return name, problems + gate.found


def _failures(registry: Registry, names: Collection[str]) -> list[str]:
    """Every problem of the plugin's own failures, and its dependencies' failures, named."""
    found: list[str] = []
    for failure in registry.failures:
        who = "" if failure.plugin in names else f"dependency {failure.plugin!r}: "
        found += [f"{who}{problem}" for problem in failure.problems]
    return found


def _tier1(plugin: Plugin, budget: int) -> list[str]:
    """An ``always`` plugin's Tier-1 entry must fit ``budget`` tokens."""
    if plugin.visibility != "always":
        return []  # on-demand and silent plugins cost no Tier-1 tokens
    entry = tier1_entry(plugin)
    cost = count_tokens(entry)
    if cost <= budget:
        return []
    return [
        f"Tier-1 entry costs {cost} tokens, over the budget of {budget}: shorten the "
        "manifest fields it shows (summary, the first two when_to_use lines, the first "
        "when_not_to_use line, the first example), or pass tier1_budget=...:\n"
        + "\n".join(f"      {line}" for line in entry.splitlines())
    ]
