"""The :class:`Oracle`: the application object that owns its plugins, store and model."""

from __future__ import annotations

import asyncio
import inspect
import logging
import weakref
from collections.abc import AsyncIterator, Sequence
from functools import cached_property
from typing import Any

import pluggy

from oracle_core.capabilities.gate import CapabilityGate, visible_tools
from oracle_core.capabilities.meta_tools import META_TOOLS
from oracle_core.capabilities.prompt import DEFAULT_INSTRUCTIONS, system_prompt, tier1_block
from oracle_core.errors import OracleError, PluginLoadError, StrictPluginError
from oracle_core.models.base import Model
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.plugins.discovery import find_entry_points, select
from oracle_core.plugins.loader import Candidate, assemble, new_plugin_manager, source_for_object
from oracle_core.plugins.registry import Registry
from oracle_core.run.events import Event
from oracle_core.run.loop import Run, RunResult
from oracle_core.run.messages import Message, ModelRequest
from oracle_core.run.middleware import Middleware
from oracle_core.settings import Settings
from oracle_core.store import Checkpointer, SQLiteCheckpointer
from oracle_core.tokens import count_json_tokens, count_tokens
from oracle_core.tools import Tool

log = logging.getLogger("oracle_core")


class Oracle:
    """An agent assembled from plugins.

    Nothing is global: each oracle owns its plugin manager, registry, store and model, so
    tests and embedding applications can build as many as they like. Building one imports
    and validates the plugins; the store opens and litellm is imported on first use.

    Args:
        plugins: plugin modules or objects to register from code, before any entry point.
        entry_points: also load the installed ``oracle.plugins`` entry points (filtered by
            ``ORACLE_LOAD_PLUGINS`` and ``ORACLE_DISABLE_PLUGINS``).
        settings: operator settings; default :meth:`Settings.from_env`.
        path: folders to search for entry points instead of ``sys.path``.
        model: a :class:`~oracle_core.models.base.Model`, or a litellm model string; default
            ``settings.model`` (``ORACLE_MODEL``), else the offline demo model.
        checkpointer: where thread state is saved; default SQLite at ``$ORACLE_HOME/oracle.db``.
        instructions: the opening of the system prompt.
        max_steps: model calls a run may make before it stops.
        tool_concurrency: tool calls of one model response that may run at once.
        tool_timeout: seconds a tool call may take unless the tool sets its own ``timeout``.

    Raises:
        StrictPluginError: when ``settings.strict`` is set and any plugin failed.
    """

    def __init__(
        self,
        plugins: Sequence[Any] = (),
        *,
        entry_points: bool = True,
        settings: Settings | None = None,
        path: Sequence[str] | None = None,
        model: Model | str | None = None,
        checkpointer: Checkpointer | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        max_steps: int = 12,
        tool_concurrency: int = 4,
        tool_timeout: float = 60.0,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self._plugin_state: dict[str, dict[str, Any]] = {}
        self.plugin_manager: pluggy.PluginManager = new_plugin_manager()
        self.registry: Registry = self._assemble(plugins, entry_points, path)
        self.instructions = instructions
        self.max_steps = max_steps
        self.tool_concurrency = tool_concurrency
        self.tool_timeout = tool_timeout
        self._model = model
        self._checkpointer = checkpointer
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._visible: dict[tuple[str, ...], list[Tool]] = {}
        self._started = False
        self._closed = False

    def _assemble(
        self, plugins: Sequence[Any], entry_points: bool, path: Sequence[str] | None
    ) -> Registry:
        settings = self.settings
        candidates = [Candidate(source_for_object(obj), obj) for obj in plugins]
        early: list[PluginLoadError] = []
        if entry_points:
            sources, missing = select(
                find_entry_points(path), settings.load_plugins, settings.disable_plugins
            )
            candidates += [Candidate(source) for source in sources]
            early += [
                PluginLoadError(
                    f"ORACLE_LOAD_PLUGINS names {name!r}, but no installed plugin or distribution "
                    "has that name: check the spelling, or pip install it",
                    plugin=name,
                )
                for name in missing
            ]
        registry = assemble(
            candidates,
            manager=self.plugin_manager,
            config=settings.plugin_config,
            trace=settings.trace_plugins,
            failures=early,
            oracle=self,
        )
        if settings.strict and registry.failures:
            raise StrictPluginError(list(registry.failures))
        return registry

    def plugin_state(self, plugin: str) -> dict[str, Any]:
        """A dict a plugin may keep per-oracle state in (connections, caches), by plugin name.

        Hooks receive the oracle, so a plugin opens its resources in ``oracle_tools`` or
        ``oracle_startup``, keeps them here, and closes them in ``oracle_shutdown``; nothing
        needs to live at module level, and two oracles in one process never share state.
        """
        return self._plugin_state.setdefault(plugin, {})

    # -- parts made on first use ------------------------------------------------------------

    @property
    def checkpointer(self) -> Checkpointer:
        """The thread store (SQLite under ``ORACLE_HOME`` unless one was given)."""
        if self._checkpointer is None:
            self._checkpointer = SQLiteCheckpointer(self.settings.database_path)
        return self._checkpointer

    @property
    def model(self) -> Model:
        """The model runs talk to."""
        if not isinstance(self._model, Model):
            name = self._model or self.settings.model
            if name:
                self._model = LiteLLMModel(name, api_base=self.settings.api_base)
            else:
                from oracle_core.models.demo import DemoModel

                self._model = DemoModel()
        return self._model

    @cached_property
    def middleware(self) -> list[Middleware]:
        """The middleware chain: the capability gate first, then each plugin's, in order."""
        return [CapabilityGate(self.registry), *self.registry.middleware()]

    @cached_property
    def tier1_block(self) -> str:
        """The Tier-1 block advertising ``always`` plugins ("" when there are none)."""
        return tier1_block(self.registry)

    @cached_property
    def system_prompt(self) -> str:
        """The system prompt every model call gets."""
        return system_prompt(self.instructions, self.tier1_block)

    def tier1_costs(self) -> list[tuple[str, int]]:
        """Tokens each ``always`` plugin adds to the Tier-1 block, most expensive first."""
        from oracle_core.capabilities.prompt import tier1_entry

        costs = [
            (p.name, count_tokens(tier1_entry(p)))
            for p in self.registry
            if p.visibility == "always"
        ]
        return sorted(costs, key=lambda c: -c[1])

    def tier1_warning(self) -> str | None:
        """A warning when the Tier-1 block costs more than ``settings.tier1_budget`` tokens."""
        if not self.tier1_block:
            return None
        cost = count_tokens(self.tier1_block)
        if cost <= self.settings.tier1_budget:
            return None
        worst = ", ".join(f"{name} ({n} tokens)" for name, n in self.tier1_costs()[:3])
        return (
            f"the Tier-1 block costs {cost} tokens, over the budget of {self.settings.tier1_budget} "
            f"(ORACLE_TIER1_BUDGET); the most expensive always plugins: {worst}. Shorten their "
            "manifests or make some on-demand."
        )

    # -- what one model call is shown -----------------------------------------------------------

    def tools_for(self, loaded: Sequence[str]) -> list[Tool]:
        """The tools the model sees in a thread with ``loaded`` plugins: meta-tools first."""
        key = tuple(loaded)
        tools = self._visible.get(key)
        if tools is None:
            tools = [*META_TOOLS, *(b.tool for b in visible_tools(self.registry, key))]
            if len(self._visible) > 1024:
                self._visible.clear()
            self._visible[key] = tools
        return tools

    def build_request(
        self,
        thread_id: str,
        run_id: str,
        step: int,
        messages: list[Message],
        loaded: Sequence[str],
        user_id: str = "default",
    ) -> ModelRequest:
        """The model request for one step, with the gate's tool list."""
        return ModelRequest(
            thread_id=thread_id,
            run_id=run_id,
            step=step,
            model=self.model.name,
            system_prompt=self.system_prompt,
            messages=list(messages),
            tools=self.tools_for(loaded),
            user_id=user_id,
        )

    def token_split(self, request: ModelRequest) -> dict[str, int]:
        """The prompt of ``request`` in tokens: Tier-1 block, meta-tools, tool schemas, messages."""
        tier1 = self._tier1_tokens
        meta = sum(_schema_tokens(t) for t in request.tools if t in META_TOOLS)
        schemas = sum(_schema_tokens(t) for t in request.tools if t not in META_TOOLS)
        messages = self._instructions_tokens + sum(_message_tokens(m) for m in request.messages)
        return {
            "tier1": tier1,
            "meta_tools": meta,
            "tool_schemas": schemas,
            "messages": messages,
            "total": tier1 + meta + schemas + messages,
        }

    @cached_property
    def _instructions_tokens(self) -> int:
        return count_tokens(self.instructions)

    @cached_property
    def _tier1_tokens(self) -> int:
        return count_tokens(self.tier1_block) if self.tier1_block else 0

    async def prompt_report(self, thread_id: str) -> dict[str, Any]:
        """What the next model call of ``thread_id`` would get, with token counts per part."""
        state = await self.checkpointer.load(thread_id)
        request = self.build_request(thread_id, "next", 1, state.messages, state.loaded_plugins)
        return {
            "thread_id": thread_id,
            "model": self.model.name,
            "loaded_plugins": state.loaded_plugins,
            "thread_usage": state.usage.as_dict(),
            "system_prompt": request.system_prompt,
            "tools": request.openai_tools(),
            "tokens": {
                **self.token_split(request),
                "per_tool": {t.name: _schema_tokens(t) for t in request.tools},
            },
            "warnings": [w for w in [self.tier1_warning()] if w],
        }

    # -- runs ------------------------------------------------------------------------------------

    def thread_busy(self, thread_id: str) -> bool:
        """Whether a run is in progress on ``thread_id`` in this process."""
        lock = self._locks.get(thread_id)
        return lock is not None and lock.locked()

    def thread_lock(self, thread_id: str) -> asyncio.Lock:
        """The lock that serializes runs on one thread within this process."""
        lock = self._locks.get(thread_id)
        if lock is None:
            lock = self._locks[thread_id] = asyncio.Lock()
        return lock

    def stream(
        self, thread_id: str, message: str, *, user_id: str = "default", text_deltas: bool = True
    ) -> AsyncIterator[Event]:
        """Run one user message on ``thread_id``, yielding events as they happen.

        Runs on one thread are serialized; the last event is always
        :class:`~oracle_core.run.events.RunFinished`. Closing the iterator early (``aclose()``)
        cancels the run and saves it as ``cancelled``.
        """
        return Run(self, thread_id, message, user_id=user_id, stream=text_deltas).events()

    async def run(self, thread_id: str, message: str, *, user_id: str = "default") -> RunResult:
        """Run one user message on ``thread_id`` to its answer and return the whole run."""
        stream = self.stream(thread_id, message, user_id=user_id, text_deltas=False)
        return RunResult.from_events(thread_id, [event async for event in stream])

    def run_sync(self, thread_id: str, message: str, *, user_id: str = "default") -> RunResult:
        """:meth:`run` for scripts: runs the event loop, then closes the oracle."""

        async def main() -> RunResult:
            try:
                return await self.run(thread_id, message, user_id=user_id)
            finally:
                await self.close()

        return asyncio.run(main())

    async def start(self) -> None:
        """Run every plugin's ``oracle_startup`` hook, once.

        Raises:
            OracleError: when the oracle was closed.
        """
        if self._closed:
            raise OracleError("this oracle is closed: build a new Oracle to run again")
        if self._started:
            return
        self._started = True
        if self.tier1_block and (warning := self.tier1_warning()):
            log.warning("%s", warning)
        await self._lifecycle("oracle_startup")

    async def close(self) -> None:
        """Run every plugin's ``oracle_shutdown`` hook and close the store, once."""
        if self._closed:
            return
        self._closed = True
        self._started = False
        try:
            await self._lifecycle("oracle_shutdown")
        finally:
            if self._checkpointer is not None:
                await self._checkpointer.close()

    async def _lifecycle(self, hook: str) -> None:
        names = {id(p.obj): p.name for p in self.registry}
        # pluggy lists implementations last-registered first; run them in registration order.
        for impl in reversed(getattr(self.plugin_manager.hook, hook).get_hookimpls()):
            kwargs = {"oracle": self}
            try:
                result = impl.function(*[kwargs[a] for a in impl.argnames])
                if inspect.isawaitable(result):
                    await result
            except Exception as error:
                raise OracleError(
                    f"{hook} of plugin {names.get(id(impl.plugin), impl.plugin_name)!r} raised {type(error).__name__}: {error}"
                ) from error

    async def __aenter__(self) -> Oracle:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _schema_tokens(tool: Tool) -> int:
    cached: int | None = tool.__dict__.get("_tokens")
    if cached is None:
        cached = count_json_tokens(tool.openai_schema())
        object.__setattr__(tool, "_tokens", cached)
    return cached


def _message_tokens(message: Message) -> int:
    cached = message.get("_tokens")
    if not isinstance(cached, int):
        public = {k: v for k, v in message.items() if not k.startswith("_")}
        cached = message["_tokens"] = count_json_tokens(public)
    return cached
