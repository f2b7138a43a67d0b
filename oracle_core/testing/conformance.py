"""The conformance check a plugin author runs in one line: ``check_plugin(my_plugin)``.

It checks what the core and the model rely on, and lists every problem at once:

- the manifest is valid, with no soft-limit warnings;
- an ``always`` plugin's Tier-1 entry fits a token budget;
- every example names a tool of the plugin, with arguments valid for its schema;
- every tool's definition is accepted by OpenAI function calling, and no tool name is a
  meta-tool's or repeated;
- the capability gate, exercised for real through a scripted model over litellm: on-demand
  tools are hidden until loaded, a call to one before ``load_capability`` is refused and the
  tool's function is never entered, ``load_capability`` works and the tools show on the
  very next model call, ``always`` and ``silent`` tools show from the first call, and a
  silent plugin is never listed.

The gate half lives in :mod:`oracle_core.testing.gate_check`. Tool functions are never run:
during the gate check each is replaced by a stand-in that records the call, so a check makes
no network call and changes nothing.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from oracle_core.capabilities.prompt import tier1_entry
from oracle_core.errors import ToolArgumentsError
from oracle_core.manifest import PluginManifest, describe_validation_error, manifest_warnings
from oracle_core.oracle import Oracle
from oracle_core.plugins.loader import new_plugin_manager, source_for_object
from oracle_core.plugins.registry import META_TOOL_NAMES, Plugin
from oracle_core.settings import Settings
from oracle_core.store import MemoryCheckpointer
from oracle_core.testing.function_schema import function_schema_problems
from oracle_core.testing.gate_check import GateCheck
from oracle_core.testing.harness import import_plugin, run_sync, write_config
from oracle_core.testing.scripted import ScriptedModel
from oracle_core.tokens import count_tokens
from oracle_core.tools import Tool

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
        declared = _Declared(obj)
        if declared.manifest is not None and config:
            write_config(settings.home, {declared.name: config})
        with ScriptedModel(name="conformance") as model:
            oracle = Oracle(
                [*(import_plugin(d) for d in dependencies), obj],
                entry_points=False,
                settings=settings,
                model=model,
                checkpointer=MemoryCheckpointer(),
            )
            gate = GateCheck()
            try:
                plugin = oracle.registry.get(declared.name)
                if declared.manifest is not None:
                    tools = plugin.tools if plugin is not None else declared.call_tools(oracle)
                    declared.check_tools(tools)
                    declared.check_tier1(budget)
                gate.assembly(
                    oracle, {declared.name, declared.source_name}, bool(declared.problems)
                )
                if plugin is not None:
                    await gate.converse(oracle, model, plugin)
            except Exception as error:  # a plugin broken in a way no check foresaw
                gate.found.append(f"the check could not finish: {type(error).__name__}: {error}")
            finally:
                await oracle.close()
        return declared.name, declared.problems + gate.found


class _Declared:
    """The checks of what the plugin declares: its manifest and its tools."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.source_name = self.name = source_for_object(obj).name
        self.manifest: PluginManifest | None = None
        self.problems: list[str] = []
        self.manager = new_plugin_manager()
        try:
            self.manager.register(obj)
        except Exception as error:
            self.problems.append(f"hooks: the plugin cannot be registered: {error}")
            return
        for caller in self.manager.get_hookcallers(obj) or []:
            if not caller.has_spec():
                self.problems.append(
                    f"hook {caller.name!r} is not an oracle hook (oracle_manifest, oracle_tools, "
                    "oracle_middleware, oracle_routes, oracle_startup, oracle_shutdown)"
                )
        self._manifest()

    def _manifest(self) -> None:
        try:
            results = self.manager.hook.oracle_manifest()
        except ValidationError as error:
            self._manifest_errors(error)
            return
        except Exception as error:
            self.problems.append(f"oracle_manifest raised {type(error).__name__}: {error}")
            return
        if len(results) != 1:
            self.problems.append(
                "oracle_manifest: the plugin has no manifest; implement "
                "`@hookimpl def oracle_manifest() -> PluginManifest`"
                if not results
                else f"oracle_manifest: {len(results)} implementations; keep exactly one"
            )
            return
        raw = results[0]
        if isinstance(raw, PluginManifest):
            raw = raw.model_dump(exclude_unset=True)
        if not isinstance(raw, dict):
            self.problems.append(
                f"oracle_manifest returned {type(raw).__name__}; return a PluginManifest"
            )
            return
        if isinstance(raw.get("name"), str):
            self.name = raw["name"]
        try:
            self.manifest = PluginManifest.model_validate(raw)
        except ValidationError as error:
            self._manifest_errors(error)
            return
        self.problems += [
            f"manifest field {w.field!r} {w.message}" for w in manifest_warnings(self.manifest)
        ]

    def _manifest_errors(self, error: ValidationError) -> None:
        self.problems += [
            f"manifest field {field!r} {message}"
            for field, message in describe_validation_error(error)
        ]

    def call_tools(self, oracle: Oracle) -> list[Tool]:
        """The plugin's tools from its own hook, when the oracle could not assemble it.

        A hook that raises or returns something else is reported by the assembly already.
        """
        config = oracle.settings.plugin_config(self.name)
        try:
            results = self.manager.hook.oracle_tools(config=config, oracle=oracle)
        except Exception:
            return []
        return [
            item
            for result in results
            if isinstance(result, list | tuple)
            for item in result
            if isinstance(item, Tool)
        ]

    def check_tools(self, tools: list[Tool]) -> None:
        """Names, OpenAI schemas and reachability of ``tools``, and the manifest's examples."""
        assert self.manifest is not None
        names = [t.name for t in tools]
        visibility = self.manifest.visibility
        for index, tool in enumerate(tools):
            where = f"tool {tool.name!r}"
            if tool.name in META_TOOL_NAMES:
                self.problems.append(
                    f"{where} has the name of a core meta-tool; rename it "
                    f"(@tool(name='{self.name.replace('-', '_')}_{tool.name}'))"
                )
            if names.index(tool.name) != index:
                self.problems.append(f"{where} is registered more than once; rename one")
                continue
            self.problems += [
                f"{where}: {p}" for p in function_schema_problems(tool.openai_schema())
            ]
            try:
                tool.validate({})
            except ToolArgumentsError:
                pass  # it has required arguments: that is what validation is for
            except Exception as error:
                self.problems.append(
                    f"{where} cannot validate its arguments ({type(error).__name__}: {error}); "
                    "make it with @tool"
                )
            if tool.visibility == "on-demand" and visibility != "on-demand":
                self.problems.append(
                    f"{where} is on-demand in {_a(visibility)} plugin: loading {self.name!r} "
                    "cannot show it, so the model can never call it; give it "
                    f"visibility={visibility!r} or move it to an on-demand plugin"
                )
        by_name = {t.name: t for t in tools}
        for index, example in enumerate(self.manifest.examples):
            field = f"examples[{index}]"
            target = by_name.get(example.tool)
            if target is None:
                known = ", ".join(by_name) or "none"
                self.problems.append(
                    f"manifest field '{field}.tool' names {example.tool!r}, which is not a tool "
                    f"of this plugin (its tools: {known})"
                )
                continue
            try:
                target.validate(example.args)
            except ToolArgumentsError as error:
                self.problems.append(
                    f"manifest field '{field}.args' does not fit {example.tool!r}: {error}"
                )
            except Exception:
                pass  # the tool cannot validate anything: reported with the tool

    def check_tier1(self, budget: int) -> None:
        """An ``always`` plugin's Tier-1 entry fits ``budget`` tokens."""
        assert self.manifest is not None
        if self.manifest.visibility != "always":
            return  # on-demand and silent plugins cost no Tier-1 tokens
        entry = tier1_entry(Plugin(self.manifest, source_for_object(self.obj)))
        cost = count_tokens(entry)
        if cost > budget:
            self.problems.append(
                f"Tier-1 entry costs {cost} tokens, over the budget of {budget}: shorten the "
                "manifest fields it shows (summary, the first two when_to_use lines, the first "
                "when_not_to_use line, the first example), or pass tier1_budget=...:\n"
                + "\n".join(f"      {line}" for line in entry.splitlines())
            )


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"
