"""The :class:`Oracle`: a thin facade that assembles plugins, starts them, and runs.

Its lifecycle, like datasette's: build (import, register and validate the plugins into a
:class:`~oracle_core.plugins.registry.Registry`), start (run every ``oracle_startup`` hook;
only then is the oracle started), run (any number of runs, each over an immutable
:class:`~oracle_core.run.deps.RunDeps`), close (``oracle_shutdown`` hooks, the store).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import weakref
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any

import pluggy

from oracle_core.capabilities.prompt import DEFAULT_INSTRUCTIONS, tier1_warning
from oracle_core.errors import OracleClosedError, PluginLoadError, StrictPluginError
from oracle_core.host import PluginHost, PluginStates
from oracle_core.models.base import Model
from oracle_core.plugins.discovery import find_entry_points, select
from oracle_core.plugins.lifecycle import Lifecycle
from oracle_core.plugins.loader import Candidate, assemble, new_plugin_manager, source_for_object
from oracle_core.plugins.registry import Registry
from oracle_core.run.chain import MiddlewareChain
from oracle_core.run.deps import RunDeps
from oracle_core.run.events import Event
from oracle_core.run.executor import ToolExecutor
from oracle_core.run.limits import RunLimits
from oracle_core.run.locks import ThreadLocks
from oracle_core.run.loop import Run
from oracle_core.run.pool import SyncToolPool
from oracle_core.run.requests import RequestBuilder
from oracle_core.run.result import RunResult
from oracle_core.run.threads import ThreadCache
from oracle_core.settings import Settings
from oracle_core.store.base import Checkpointer

log = logging.getLogger("oracle_core")


class Oracle:
    """An agent assembled from plugins.

    Nothing is global: each oracle owns its plugin manager, registry, store and model, so
    tests and embedding applications can build as many as they like. Building one imports
    and validates the plugins; the first run (or :meth:`start`) runs their startup hooks;
    the store opens and litellm is imported on first use.

    Args:
        plugins: plugin modules or objects to register from code, before any entry point.
        entry_points: also load the installed ``oracle.plugins`` entry points (filtered by
            ``ORACLE_LOAD_PLUGINS`` and ``ORACLE_DISABLE_PLUGINS``).
        settings: operator settings; default :meth:`Settings.from_env`.
        path: folders to search for entry points instead of ``sys.path``.
        model: a :class:`~oracle_core.Model`, or a litellm model string; default
            ``settings.model`` (``ORACLE_MODEL``), else the offline demo model.
        checkpointer: where thread state is saved; default SQLite at ``$ORACLE_HOME/oracle.db``.
        instructions: the opening of the system prompt.
        max_steps: model calls a run may make before it stops (default 12).
        tool_concurrency: tool calls of one model response that may run at once (default 4).
        tool_timeout: seconds a tool call may take unless the tool sets its own ``timeout``
            (default 60).
        limits: every run limit at once (steps, concurrency, timeouts, result and text
            caps, sync-tool workers, busy wait); default ``settings.run_limits``, read from
            the environment. The three above, when given, win over it.

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
        max_steps: int | None = None,
        tool_concurrency: int | None = None,
        tool_timeout: float | None = None,
        limits: RunLimits | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.instructions = instructions
        chosen: dict[str, Any] = {"max_steps": max_steps, "tool_concurrency": tool_concurrency,
                                  "tool_timeout": tool_timeout}  # fmt: skip
        self.limits = dataclasses.replace(
            limits or self.settings.run_limits,
            **{name: value for name, value in chosen.items() if value is not None},
        )
        self._pool = SyncToolPool(self.limits.sync_tool_workers)
        self._states = PluginStates()
        self.plugin_manager: pluggy.PluginManager = new_plugin_manager()
        self._registry = self._assemble(plugins, entry_points, path)
        self._requests: RequestBuilder | None = None
        self._model = model
        self._checkpointer = checkpointer
        self._locks = ThreadLocks()
        self._deps: RunDeps | None = None
        self._start_lock: asyncio.Lock | None = None
        self._lifecycle: Lifecycle | None = None
        self._runner: asyncio.Runner | None = None
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
            host=PluginHost(settings, self._states),
            failures=early,
        )
        if settings.strict and registry.failures:
            raise StrictPluginError(list(registry.failures))
        return registry

    # -- what the oracle is made of ------------------------------------------------------------

    @property
    def registry(self) -> Registry:
        """The assembled plugins; once started, only those whose startup succeeded."""
        return self._registry

    @property
    def started(self) -> bool:
        """Whether every startup hook has run (and the oracle is not closed)."""
        return self._deps is not None

    def plugin_state(self, plugin: str) -> dict[str, Any]:
        """A dict a plugin may keep per-oracle state in (connections, caches), by plugin name.

        Hooks receive a handle with the same method, so a plugin opens its resources in
        ``oracle_tools`` or ``oracle_startup``, keeps them here, and closes them in
        ``oracle_shutdown``; two oracles in one process never share state.
        """
        return self._states(plugin)

    @property
    def checkpointer(self) -> Checkpointer:
        """The thread store (SQLite under ``ORACLE_HOME`` unless one was given)."""
        if self._checkpointer is None:
            from oracle_core.store.sqlite import SQLiteCheckpointer

            self._checkpointer = SQLiteCheckpointer(self.settings.database_path)
        return self._checkpointer

    @property
    def model(self) -> Model:
        """The model runs talk to.

        A model string picks its client (:func:`~oracle_core.models.openai.model_for`): the
        openai SDK for ``openai/...`` strings, litellm for the rest, and litellm for all
        when ``ORACLE_MODEL_CLIENT=litellm``.
        """
        if not isinstance(self._model, Model):
            name = self._model or self.settings.model
            if name:
                from oracle_core.models.openai import model_for

                self._model = model_for(
                    name, api_base=self.settings.api_base, env=self.settings.env
                )
            else:
                from oracle_core.models.demo import DemoModel

                self._model = DemoModel()
        return self._model

    @property
    def requests(self) -> RequestBuilder:
        """Builds each step's model request (system prompt, the gate's tools, token split)."""
        if self._requests is None or self._requests.registry is not self._registry:
            self._requests = RequestBuilder(self._registry, self.instructions)
        return self._requests

    @property
    def tier1_block(self) -> str:
        """The Tier-1 block advertising ``always`` plugins ("" when there are none)."""
        return self.requests.tier1_block

    @property
    def system_prompt(self) -> str:
        """The system prompt every model call gets."""
        return self.requests.system_prompt

    def tier1_warning(self) -> str | None:
        """A warning when the Tier-1 block costs more than ``settings.tier1_budget`` tokens."""
        return tier1_warning(self._registry, self.settings.tier1_budget)

    async def prompt_report(self, thread_id: str) -> dict[str, Any]:
        """What the next model call of ``thread_id`` would get, with token counts per part."""
        state = await self.checkpointer.load(thread_id)
        requests = self.requests
        request = requests.build(
            thread_id=thread_id,
            run_id="next",
            step=1,
            model=self.model.name,
            messages=state.messages,
            loaded=state.loaded_plugins,
        )
        return {
            "thread_id": thread_id,
            "model": self.model.name,
            "loaded_plugins": state.loaded_plugins,
            "thread_usage": state.usage.as_dict(),
            "system_prompt": request.system_prompt,
            "tools": request.openai_tools(),
            "tokens": {
                **requests.token_split(request),
                "per_tool": {t.name: requests.schema_tokens(t) for t in request.tools},
            },
            "warnings": [w for w in [self.tier1_warning()] if w],
        }

    # -- lifecycle -------------------------------------------------------------------------------

    async def run_deps(self) -> RunDeps:
        """What runs of this oracle use (model, store, executor, middleware, limits).

        Starts the oracle first if needed. For embedding applications and tests that drive
        the run loop's parts directly.
        """
        return await self._running()

    async def start(self) -> None:
        """Run every plugin's ``oracle_startup`` hook, once; then the oracle is started.

        Raises:
            OracleClosedError: when the oracle was closed.
        """
        await self._running()

    async def _running(self) -> RunDeps:
        if self._closed:
            raise OracleClosedError("this oracle is closed: build a new Oracle to run again")
        if self._deps is not None:
            return self._deps
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._deps is None:
                await self._startup()
                self._deps = self._build_deps()
        return self._deps

    async def _startup(self) -> None:
        if warning := self.tier1_warning():
            log.warning("%s", warning)
        settings = self.settings
        self._lifecycle = Lifecycle(
            self.plugin_manager,
            self._registry,
            timeout=settings.hook_timeout,
            strict=settings.strict,
        )
        # Plugins whose startup failed are gone from here on: tools, routes, middleware.
        self._registry = await self._lifecycle.start(self)
        await self.checkpointer.mark_interrupted()

    def _build_deps(self) -> RunDeps:
        registry = self._registry
        return RunDeps(
            model=self.model,
            store=self.checkpointer,
            requests=self.requests,
            executor=ToolExecutor(registry, self.limits, self, self._pool),
            middleware=MiddlewareChain(registry.middleware()),
            limits=self.limits,
            locks=self._locks,
            threads=ThreadCache(),
        )

    async def close(self) -> None:
        """Run every plugin's ``oracle_shutdown`` hook and close the store, once."""
        if self._closed:
            return
        self._closed = True
        lifecycle, self._lifecycle, self._deps = self._lifecycle, None, None
        try:
            if lifecycle is not None:
                await lifecycle.stop(self)
        finally:
            self._pool.close()
            if isinstance(self._model, Model):
                await self._model.aclose()
            if self._checkpointer is not None:
                await self._checkpointer.close()

    async def __aenter__(self) -> Oracle:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_sync()

    # -- runs ------------------------------------------------------------------------------------

    def thread_busy(self, thread_id: str) -> bool:
        """Whether a run is in progress on ``thread_id`` in this process."""
        return self._locks.busy(thread_id)

    async def stream(
        self, thread_id: str, message: str, *, user_id: str = "default", text_deltas: bool = True
    ) -> AsyncIterator[Event]:
        """Run one user message on ``thread_id``, yielding events as they happen.

        Starts the oracle first if needed. Runs on one thread are serialized; the last
        event is always :class:`~oracle_core.RunFinished`. Closing the iterator early
        (``aclose()``) cancels the run and saves it as ``cancelled``.
        """
        deps = await self._running()
        run = Run(deps, thread_id, message, user_id=user_id, stream=text_deltas)
        async with aclosing(run.events()) as events:
            async for event in events:
                yield event

    async def run(self, thread_id: str, message: str, *, user_id: str = "default") -> RunResult:
        """Run one user message on ``thread_id`` to its answer and return the whole run."""
        stream = self.stream(thread_id, message, user_id=user_id, text_deltas=False)
        return RunResult.from_events(thread_id, [event async for event in stream])

    def run_sync(self, thread_id: str, message: str, *, user_id: str = "default") -> RunResult:
        """:meth:`run` for scripts, on an event loop the oracle keeps between calls.

        Call it as often as you like; close the oracle with :meth:`close_sync` (or use it
        as ``with Oracle(...) as oracle:``) to run the shutdown hooks and close the store.
        """
        return self._loop().run(self.run(thread_id, message, user_id=user_id))

    def close_sync(self) -> None:
        """:meth:`close` for scripts that used :meth:`run_sync`."""
        runner, self._runner = self._runner, None
        if runner is None:
            asyncio.run(self.close())
            return
        try:
            runner.run(self.close())
        finally:
            runner.close()

    def _loop(self) -> asyncio.Runner:
        if self._runner is None:
            self._runner = asyncio.Runner()
            weakref.finalize(self, _discard, self._runner)
        return self._runner


def _discard(runner: asyncio.Runner) -> None:
    """Close the event loop of a :meth:`Oracle.run_sync` oracle that was never closed.

    Called when the oracle is garbage-collected, which may happen while another event
    loop runs in this thread: then the loop is closed without running it again.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        runner.close()
        return
    with contextlib.suppress(RuntimeError):
        loop = runner.get_loop()
        if not loop.is_closed():
            loop.close()
