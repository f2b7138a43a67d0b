"""The half of the conformance check that runs the capability gate for real.

One scripted conversation goes through a real oracle: the model lists capabilities and
calls every tool of the plugin before loading it, loads it, then calls its on-demand tools
again. What the model was shown and what ran are checked at each step. Tool functions never
run: a silent probe plugin, registered after the plugin under check, has the innermost
middleware, which sees exactly the calls the gate let through (and every middleware of the
plugin passed on), validates their arguments, records them and answers for the tool, so
nothing a tool does (network, files) happens during a check.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from oracle_core.authoring.manifest import PluginManifest
from oracle_core.authoring.middleware import Middleware, ToolHandler
from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import ToolArgumentsError
from oracle_core.hookspecs import hookimpl
from oracle_core.oracle import Oracle
from oracle_core.plugins.core_tools import LIST_CAPABILITIES, LOAD_CAPABILITY
from oracle_core.plugins.registry import Plugin
from oracle_core.run.executor import decode_arguments, error_result
from oracle_core.testing.scripted import ScriptedModel, ToolCallSpec
from oracle_core.values.events import Event, ModelCallStarted, RunFinished, ToolResultEvent
from oracle_core.values.messages import ToolCall, ToolResult

THREAD = "conformance"
"""The thread the scripted conversation runs on."""


PROBE_NAME = "oracle-conformance-probe"
"""The manifest name of the probe plugin ``check_plugin`` registers last."""


class _Recorder(Middleware):
    """Answers for the checked plugin's tools instead of running them, and records each call."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.entered: list[str] = []

    async def wrap_tool_call(self, call: ToolCall, call_next: ToolHandler) -> ToolResult:
        tool = self.tools.get(call.name)
        if tool is None:
            return await call_next(call)  # a meta-tool, or a dependency's tool
        try:
            tool.validate(decode_arguments(call))
        except ToolArgumentsError as error:
            return error_result(call, str(error), error)
        self.entered.append(call.name)
        return ToolResult(call.id, call.name, json.dumps({"conformance": f"{call.name} ran"}))


class Probe:
    """A silent plugin without tools whose middleware stands in for the checked plugin's tools.

    Attributes:
        recorder: its middleware; ``recorder.entered`` lists the tool calls that got through.
    """

    def __init__(self) -> None:
        self.recorder = _Recorder()

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        """A silent manifest: the model never sees the probe."""
        return PluginManifest(
            name=PROBE_NAME, summary="Stands in for tools during check_plugin.", visibility="silent"
        )

    @hookimpl
    def oracle_middleware(self) -> list[Middleware]:
        """The recorder (innermost, since the probe is registered last)."""
        return [self.recorder]


def _arguments(plugin: Plugin, tool: Tool) -> dict[str, Any] | None:
    """Arguments a model could call ``tool`` with: an example's, else ``{}`` if that fits."""
    for example in plugin.manifest.examples:
        if example.tool == tool.name:
            return dict(example.args)
    try:
        tool.validate({})
    except Exception:
        return None
    return {}


@dataclass
class _Script:
    """The conversation to script for one plugin, and the tools it is about."""

    hidden: list[Tool]
    shown: list[Tool]
    before: list[ToolCallSpec] = field(default_factory=list)
    after: list[ToolCallSpec] = field(default_factory=list)

    @classmethod
    def for_plugin(cls, plugin: Plugin) -> _Script:
        tier = plugin.visibility
        script = cls(
            hidden=[t for t in plugin.tools if (t.visibility or tier) == "on-demand"],
            shown=[t for t in plugin.tools if (t.visibility or tier) != "on-demand"],
        )
        args = {t.name: _arguments(plugin, t) for t in plugin.tools}
        # Refused calls never reach validation, so a hidden tool is called even without
        # arguments known to fit; a call that should run needs arguments that fit.
        script.before = [(LIST_CAPABILITIES, {})]
        script.before += [(t.name, args[t.name] or {}) for t in script.hidden]
        script.before += [(t.name, a) for t in script.shown if (a := args[t.name]) is not None]
        if tier == "on-demand":
            script.after = [(t.name, a) for t in script.hidden if (a := args[t.name]) is not None]
        return script

    def queue(self, model: ScriptedModel, plugin: str) -> None:
        model.reply_tool_calls(self.before)
        model.reply_tool_call(LOAD_CAPABILITY, {"names": [plugin]})
        if self.after:
            model.reply_tool_calls(self.after)
        model.reply_text("The conformance check is done.")


class GateCheck:
    """Checks a plugin's behaviour behind the capability gate.

    Args:
        probe: the probe plugin registered (last) in the oracle under check.

    Attributes:
        found: the problems found, each naming the tool or step at fault.
    """

    def __init__(self, probe: Probe) -> None:
        self.found: list[str] = []
        self.entered = probe.recorder.entered
        self._tools = probe.recorder.tools

    async def converse(self, oracle: Oracle, model: ScriptedModel, plugin: Plugin) -> None:
        """Run the scripted conversation and check every step of it."""
        self._tools.update({t.name: t for t in plugin.tools})
        script = _Script.for_plugin(plugin)
        script.queue(model, plugin.name)

        events: list[Event] = []
        entered_before_load: list[str] = []
        try:
            async for event in oracle.stream(THREAD, "Run the conformance check."):
                if isinstance(event, ModelCallStarted) and event.step == 2:
                    entered_before_load = list(self.entered)
                events.append(event)
        except Exception as error:
            self.found.append(f"the oracle could not run a turn: {type(error).__name__}: {error}")
            return
        finished = events[-1]
        if isinstance(finished, RunFinished) and finished.status != "completed":
            self.found.append(f"the conformance turn failed: {finished.error}")

        results = [e for e in events if isinstance(e, ToolResultEvent)]
        first, rest = results[: len(script.before)], results[len(script.before) :]
        first_request = model.request(1)
        self._first_call(plugin, first_request.tool_names, first_request.system_prompt, script)
        self._listing(plugin, first[0] if first else None)
        self._before_load(plugin, script, first[1:], entered_before_load)
        self._load(plugin, rest[0] if rest else None)
        if plugin.visibility == "on-demand":
            self._after_load(plugin, model, script, rest[1:], entered_before_load)

    def _first_call(
        self, plugin: Plugin, names: list[str], system_prompt: str, script: _Script
    ) -> None:
        for tool in script.hidden:
            if tool.name in names:
                self.found.append(
                    f"tool {tool.name!r} was shown before {plugin.name!r} was loaded: on-demand "
                    f"tools must stay hidden until {LOAD_CAPABILITY}"
                )
        for tool in script.shown:
            if tool.name not in names:
                tier = tool.visibility or plugin.visibility
                self.found.append(
                    f"tool {tool.name!r} is {tier} but was not shown on the first call"
                )
        in_prompt = f"**{plugin.name}**" in system_prompt
        if plugin.visibility == "always" and not in_prompt:
            self.found.append("the always plugin has no entry in the Tier-1 block of the prompt")
        if plugin.visibility != "always" and in_prompt:
            self.found.append(f"the {plugin.visibility} plugin appears in the system prompt")

    def _listing(self, plugin: Plugin, result: ToolResultEvent | None) -> None:
        if result is None or result.is_error:
            self.found.append(
                f"{LIST_CAPABILITIES} failed: {result.content if result else 'no result'}"
            )
            return
        entry = {e["name"]: e for e in json.loads(result.content)}.get(plugin.name)
        if plugin.visibility == "silent":
            if entry is not None:
                self.found.append(f"the silent plugin is listed by {LIST_CAPABILITIES}")
        elif entry is None:
            self.found.append(
                f"the {plugin.visibility} plugin is not listed by {LIST_CAPABILITIES}"
            )
        elif entry.get("loaded") != (plugin.visibility == "always"):
            self.found.append(
                f"{LIST_CAPABILITIES} says loaded={entry.get('loaded')} before any load"
            )

    def _before_load(
        self,
        plugin: Plugin,
        script: _Script,
        results: list[ToolResultEvent],
        entered_before_load: list[str],
    ) -> None:
        hidden = len(script.hidden)
        for tool, result in zip(script.hidden, results[:hidden], strict=False):
            if not result.refused:
                self.found.append(
                    f"tool {tool.name!r}: a call before {LOAD_CAPABILITY} was not refused"
                )
            if tool.name in entered_before_load:
                self.found.append(
                    f"tool {tool.name!r} was entered before {plugin.name!r} was loaded: the "
                    "capability gate was bypassed"
                )
        for (name, _), result in zip(script.before[1 + hidden :], results[hidden:], strict=False):
            if result.refused or result.is_error or name not in entered_before_load:
                self.found.append(
                    f"tool {name!r} is shown every turn, but its call on the first model call "
                    f"did not run: {result.content}"
                )

    def _load(self, plugin: Plugin, result: ToolResultEvent | None) -> None:
        call = f"{LOAD_CAPABILITY}({{'names': [{plugin.name!r}]}})"
        if result is None:
            self.found.append(f"{call} got no result")
            return
        if plugin.visibility == "silent":
            if not result.is_error:
                self.found.append(f"{call} loaded a silent plugin: {result.content}")
            return
        if result.is_error:
            self.found.append(f"{call} failed: {result.content}")
            return
        [entry] = json.loads(result.content)
        expected = [t.name for t in plugin.tools if (t.visibility or plugin.visibility) != "silent"]
        listed = [t["name"] for t in entry.get("tools", [])]
        if entry.get("name") != plugin.name or listed != expected:
            self.found.append(
                f"{call} returned {entry.get('name')!r} with tools {listed}, not "
                f"{plugin.name!r} with {expected}"
            )
        if entry.get("alreadyAvailable") != (plugin.visibility == "always"):
            self.found.append(f"{call} returned alreadyAvailable={entry.get('alreadyAvailable')}")

    def _after_load(
        self,
        plugin: Plugin,
        model: ScriptedModel,
        script: _Script,
        results: list[ToolResultEvent],
        entered_before_load: list[str],
    ) -> None:
        try:
            third = model.request(3)
        except LookupError as error:
            self.found.append(f"after {LOAD_CAPABILITY}, the model was not called again: {error}")
            return
        for tool in script.hidden:
            if tool.name not in third.tool_names:
                self.found.append(
                    f"tool {tool.name!r} was not shown on the model call right after "
                    f"{LOAD_CAPABILITY}({{'names': [{plugin.name!r}]}})"
                )
        for (name, _), result in zip(script.after, results, strict=False):
            if result.refused or self.entered.count(name) == entered_before_load.count(name):
                self.found.append(
                    f"tool {name!r} did not run after {plugin.name!r} was loaded: {result.content}"
                )
