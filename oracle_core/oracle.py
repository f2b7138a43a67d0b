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
import os
import weakref
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any

import pluggy

from oracle_core.authoring.host import PluginHost, PluginStates
from oracle_core.authoring.secrets import Secret
from oracle_core.capabilities.prompt import DEFAULT_INSTRUCTIONS, tier1_warning
from oracle_core.capabilities.surface import (
    Catalog,
    Specialist,
    Surface,
    specialist_tools,
    surface_from_config,
)
from oracle_core.credentials.sealed import ConnectionStatus, Credentials, statuses
from oracle_core.errors import (
    OracleClosedError,
    PluginLoadError,
    StrictPluginError,
    SurfaceError,
)
from oracle_core.models.base import Model
from oracle_core.plugins.discovery import find_entry_points, select
from oracle_core.plugins.lifecycle import Lifecycle
from oracle_core.plugins.loader import Candidate, assemble, new_plugin_manager, source_for_object
from oracle_core.plugins.mcp.assembly import add_mcp_servers, split_servers
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.run.chain import MiddlewareChain
from oracle_core.run.deps import RunDeps
from oracle_core.run.executor import ToolExecutor
from oracle_core.run.locks import ThreadLocks
from oracle_core.run.loop import Run
from oracle_core.run.pool import SyncToolPool
from oracle_core.run.requests import RequestBuilder
from oracle_core.run.state import RunState
from oracle_core.run.threads import ThreadCache
from oracle_core.run.waits import settle
from oracle_core.run.waits.approvals import ApprovalCheck, ApprovalPolicy
from oracle_core.run.waits.background import BackgroundWork
from oracle_core.run.waits.checks import WaitCheck
from oracle_core.run.waits.connections import ConnectionCheck
from oracle_core.run.waits.opening import open_operations
from oracle_core.settings import Settings
from oracle_core.store.base import Checkpointer
from oracle_core.store.opening import open_store
from oracle_core.values.events import Event
from oracle_core.values.limits import RunLimits
from oracle_core.values.operations import Operation
from oracle_core.values.result import RunResult

log = logging.getLogger("oracle_core")


class Oracle:
    """An agent assembled from plugins.

    Nothing is global: each oracle owns its plugin manager, registry, store and model, so
    tests and embedding applications can build as many as they like. Building one imports
    and validates the plugins; the first run (or :meth:`start`) runs their startup hooks;
    the store opens and litellm is imported on first use.

    Args:
        plugins: plugin modules or objects to register from code, before any entry point;
            an :class:`~oracle_core.MCPServer` among them is imported as an MCP plugin.
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
        surface: what the model is shown: :class:`~oracle_core.Catalog` (meta-tools,
            Tier-1 block, tools on demand) or :class:`~oracle_core.Specialist` (exactly
            1 to 10 named tools, nothing else); default the ``[surface]`` table of
            ``oracle.toml``, else the catalog. Given here, it wins over ``oracle.toml``.

    Raises:
        StrictPluginError: when ``settings.strict`` is set and any plugin failed.
        SurfaceError: when the surface names a tool this oracle does not have, a whole
            plugin, or is otherwise invalid (the message says how to fix it).
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
        surface: Surface | None = None,
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
        self._surface = self._choose_surface(surface)
        self._requests: RequestBuilder | None = None
        self._model = model
        self._checkpointer = checkpointer
        self._locks = ThreadLocks()
        self._deps: RunDeps | None = None
        self._background: BackgroundWork | None = None
        self._waits: list[WaitCheck] | None = None
        self._start_lock: asyncio.Lock | None = None
        self._lifecycle: Lifecycle | None = None
        self._runner: asyncio.Runner | None = None
        self._credentials: Credentials | None = None
        self._closed = False

    def _assemble(
        self, plugins: Sequence[Any], entry_points: bool, path: Sequence[str] | None
    ) -> Registry:
        settings = self.settings
        plugins, servers = split_servers(plugins)
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
        host = PluginHost(settings, self._states)
        registry = assemble(candidates, manager=self.plugin_manager, host=host, failures=early)
        registry = add_mcp_servers(registry, manager=self.plugin_manager, host=host, code=servers)
        if settings.strict and registry.failures:
            raise StrictPluginError(list(registry.failures))
        return registry

    def _choose_surface(self, surface: Surface | None) -> Surface:
        """The surface given, else ``[surface]`` of ``oracle.toml``; checked against the plugins."""
        if surface is None:
            source = f"[surface] in {self.settings.config_path}"
            surface = surface_from_config(
                self.settings.surface_config(), self._registry, source=source
            )
        if not isinstance(surface, Catalog | Specialist):
            raise SurfaceError(
                f"Oracle(surface=...) takes Catalog() or Specialist(tools=[...]), not "
                f"{type(surface).__name__}"
            )
        if isinstance(surface, Specialist):
            specialist_tools(surface, self._registry)  # fails now, not on the first run
        return surface

    # -- what the oracle is made of ------------------------------------------------------------

    @property
    def registry(self) -> Registry:
        """The assembled plugins; once started, only those whose startup succeeded."""
        return self._registry

    @property
    def surface(self) -> Surface:
        """What the model is shown: the catalog (default) or a specialist surface."""
        return self._surface

    @property
    def started(self) -> bool:
        """Whether every startup hook has run (and the oracle is not closed)."""
        return self._deps is not None

    def replace_plugin(self, plugin: Plugin) -> None:
        """Put ``plugin`` in the place of the assembled plugin of the same name.

        For a plugin whose tools change while the oracle runs (an MCP server that sent
        ``notifications/tools/list_changed``). Runs already going keep the registry they
        started with; the next run, request, search and ``oracle.registry`` see the new one.
        The caller checks the new tools (names unique, schemas valid) before.

        Raises:
            KeyError: when the oracle has no plugin called ``plugin.name``.
        """
        current = self._registry
        if plugin.name not in current:
            raise KeyError(f"the oracle has no plugin {plugin.name!r} to replace")
        self._registry = Registry(
            plugins={n: plugin if n == plugin.name else p for n, p in current.plugins.items()},
            failures=current.failures,
            warnings=current.warnings,
        )
        if self._deps is not None:
            self._deps = dataclasses.replace(
                self._deps,
                requests=self.requests,
                executor=self._executor(self._registry),
                middleware=MiddlewareChain(self._registry.middleware()),
            )

    def plugin_state(self, plugin: str) -> dict[str, Any]:
        """A dict a plugin may keep per-oracle state in (connections, caches), by plugin name.

        Hooks receive a handle with the same method, so a plugin opens its resources in
        ``oracle_tools`` or ``oracle_startup``, keeps them here, and closes them in
        ``oracle_shutdown``; two oracles in one process never share state.
        """
        return self._states(plugin)

    @property
    def checkpointer(self) -> Checkpointer:
        """The thread store: the one given, else Postgres when ``ORACLE_DATABASE_URL`` is set,
        else SQLite under ``ORACLE_HOME`` (see :func:`~oracle_core.store.opening.open_store`)."""
        if self._checkpointer is None:
            settings = self.settings
            self._checkpointer = open_store(
                settings.database_url, settings.database_path, pool_size=settings.database_pool_size
            )
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
                    name,
                    api_base=self.settings.api_base,
                    api_key=self.settings.api_key,
                    env=self.settings.env,
                )
            else:
                from oracle_core.models.demo import DemoModel

                self._model = DemoModel()
        return self._model

    @property
    def requests(self) -> RequestBuilder:
        """Builds each step's model request (system prompt, the gate's tools, token split)."""
        if self._requests is None or self._requests.registry is not self._registry:
            self._requests = RequestBuilder(self._registry, self.instructions, self.surface)
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
        if isinstance(self.surface, Specialist):  # no Tier-1 block on that surface
            return None
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
            operations=bool(await self.checkpointer.list_operations(thread_id=thread_id, limit=1)),
        )
        return {
            "thread_id": thread_id,
            "model": self.model.name,
            "surface": self.surface.describe(),
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

    def _wait_checks(self) -> list[WaitCheck]:
        """The wait hook's checks, asked in order about every call (docs/waits.md)."""
        source = f"[approvals] in {self.settings.config_path}"
        policy = ApprovalPolicy.from_config(self.settings.approvals_config(), source)
        return [ApprovalCheck(policy), ConnectionCheck(self.credentials)]

    def _executor(self, registry: Registry) -> ToolExecutor:
        """The tool executor of ``registry``, with the wait checks and background calls."""
        if self._background is None:
            self._background = BackgroundWork(self.checkpointer, self._pool, self.limits)
        if self._waits is None:
            self._waits = self._wait_checks()
        return ToolExecutor(
            registry,
            self.limits,
            self,
            self._pool,
            waits=self._waits,
            background=self._background,
        )

    def _build_deps(self) -> RunDeps:
        registry = self._registry
        return RunDeps(
            model=self.model,
            store=self.checkpointer,
            requests=self.requests,
            executor=self._executor(registry),
            middleware=MiddlewareChain(registry.middleware()),
            limits=self.limits,
            locks=self._locks,
            threads=ThreadCache(),
            open_operations=open_operations,
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
            if self._background is not None:
                await self._background.close()
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
        (``aclose()``) cancels the run and saves it as ``cancelled``. Every event is also
        published to the store's channel (``checkpointer.events``) for the thread's followers.
        """
        state = RunState.new(thread_id, message, user_id=user_id, stream=text_deltas)
        run = Run(await self._running(), state)
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

    # -- operations: approvals, connections, background calls (docs/waits.md) -------------------

    async def decide(
        self, operation_id: str, *, approve: bool, reason: str | None = None
    ) -> RunResult:
        """Decide an approval, once, and resume its run, once.

        The decision is a compare-and-set in the store; the approved call then runs with
        exactly its saved arguments and the model loop goes on, or a denial tells the model
        a person declined (with ``reason``). The same decision again answers with the
        first outcome.

        Raises:
            OperationNotFoundError: for an unknown id.
            DecisionConflictError: when a different decision was recorded first (a passed
                deadline counts as a denial).
            OperationError: when it is not an approval, or the approved tool is gone
                (nothing runs and nothing is recorded then).
        """
        return await settle.decide(
            await self._running(), operation_id, approve=approve, reason=reason
        )

    def decide_sync(
        self, operation_id: str, *, approve: bool, reason: str | None = None
    ) -> RunResult:
        """:meth:`decide` for scripts (on :meth:`run_sync`'s event loop)."""
        return self._loop().run(self.decide(operation_id, approve=approve, reason=reason))

    async def resume_operation(self, operation_id: str) -> RunResult:
        """Resume the run of a settled wait, exactly once (the first outcome again after).

        For waits settled by other means than :meth:`decide` (a supplied connection).

        Raises:
            OperationNotFoundError: for an unknown id.
            OperationError: when it is still open, or its call's tool is gone.
        """
        return await settle.resume(await self._running(), operation_id)

    async def operations(
        self, *, thread_id: str | None = None, status: str | None = None
    ) -> list[Operation]:
        """Operations, oldest first; ``thread_id`` and ``status`` narrow the list."""
        deps = await self._running()
        return await deps.store.list_operations(thread_id=thread_id, status=status)

    def operations_sync(
        self, *, thread_id: str | None = None, status: str | None = None
    ) -> list[Operation]:
        """:meth:`operations` for scripts."""
        return self._loop().run(self.operations(thread_id=thread_id, status=status))

    async def operation(self, operation_id: str) -> Operation:
        """One operation.

        Raises:
            OperationNotFoundError: for an unknown id.
        """
        return await settle.get(await self._running(), operation_id)

    def operation_sync(self, operation_id: str) -> Operation:
        """:meth:`operation` for scripts."""
        return self._loop().run(self.operation(operation_id))

    async def cancel_operation(self, operation_id: str) -> Operation:
        """Cancel an operation: a background call stops, a wait's call is answered cancelled.

        Raises:
            OperationNotFoundError: for an unknown id.
            DecisionConflictError: when it was settled otherwise first.
        """
        return await settle.cancel(await self._running(), operation_id)

    def cancel_operation_sync(self, operation_id: str) -> Operation:
        """:meth:`cancel_operation` for scripts."""
        return self._loop().run(self.cancel_operation(operation_id))

    # -- connections (docs/connections.md) -------------------------------------------------------

    @property
    def credentials(self) -> Credentials:
        """The credential store: sealed in the checkpointer, key from ``ORACLE_SECRET_KEY``."""
        if self._credentials is None:
            env = self.settings.env or os.environ  # Settings(...) made in code reads none
            self._credentials = Credentials(self.checkpointer, env)
        return self._credentials

    async def supply_credential(
        self, plugin: str, name: str, value: str | Secret, *, user_id: str = "default"
    ) -> list[RunResult]:
        """Store a credential (sealed) and resume the runs waiting on it, each exactly once.

        For a per-user connection it is ``user_id``'s credential; a shared one serves every
        user, and every run waiting on it resumes. A plugin's OAuth callback route calls
        this with the token it obtained.

        Returns:
            The outcome of each run this call resumed (none waited: an empty list).

        Raises:
            UnknownConnectionError: when no loaded plugin ``plugin`` declares ``name``.
            InvalidCredentialError: for an empty, too long or multi-line value, or a bad user id.
            SecretKeyError: when ``ORACLE_SECRET_KEY`` is missing or invalid (nothing is stored).
        """
        return await settle.supply(
            self.credentials,
            self.registry,
            self._running,
            plugin,
            name,
            value,
            user_id=user_id,
            grace=self.limits.lease_ttl,
        )

    def supply_credential_sync(
        self, plugin: str, name: str, value: str | Secret, *, user_id: str = "default"
    ) -> list[RunResult]:
        """:meth:`supply_credential` for scripts (on :meth:`run_sync`'s event loop)."""
        return self._loop().run(self.supply_credential(plugin, name, value, user_id=user_id))

    async def delete_credential(self, plugin: str, name: str, *, user_id: str = "default") -> bool:
        """Remove a stored credential; ``True`` when there was one.

        A credential of a connection no loaded plugin declares any more (the plugin was
        removed) is removed too: ``user_id``'s, else the shared one.

        Raises:
            UnknownConnectionError: when no loaded plugin ``plugin`` declares ``name`` and
                nothing is stored under that name.
        """
        return await self.credentials.delete_named(self.registry, plugin, name, user_id)

    async def connection_statuses(self, *, user_id: str | None = None) -> list[ConnectionStatus]:
        """Every declared connection and whether it is set, per user, never with a value."""
        records = await self.checkpointer.credentials()  # shared ones are stored under ""
        return statuses(self.registry, records, user_id)

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
