"""The :class:`Oracle`: a thin facade that assembles plugins, starts them, and runs.

Its lifecycle, like datasette's: build (the plugins into a registry, by
:mod:`oracle_core.assembly`), start (every ``oracle_startup`` hook, then the
:class:`~oracle_core.run.deps.RunDeps`), run (any number of runs over them), close
(``oracle_shutdown`` hooks, the store). Approvals, connections and operations are the
oracle's base class's (:class:`~oracle_core.settling.Settling`, over
:mod:`oracle_core.run.waits.settle`); the ``*_sync`` twins are made by one helper.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import pluggy

from oracle_core.assembly import TIER1_COUNTS as TIER1_COUNTS  # where tests import it
from oracle_core.assembly import (
    assemble_plugins,
    choose_surface,
    chosen_limits,
    oracle_model,
    replaced,
    started_deps,
    tier1_warning_of,
    with_registry,
)
from oracle_core.authoring.host import PluginStates
from oracle_core.blocking import sync_twin
from oracle_core.capabilities.prompt import DEFAULT_INSTRUCTIONS
from oracle_core.capabilities.surface import Surface
from oracle_core.errors import OracleClosedError
from oracle_core.handle import PluginHandle, RegistryViews
from oracle_core.models.base import Model
from oracle_core.plugins.collector import fewer_collections
from oracle_core.plugins.lifecycle import Lifecycle
from oracle_core.plugins.loader import new_plugin_manager
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.prompt_report import prompt_report
from oracle_core.run.begin import begin_run
from oracle_core.run.deps import RunDeps
from oracle_core.run.locks import ThreadLocks
from oracle_core.run.observe import RunObserver
from oracle_core.run.pool import SyncToolPool
from oracle_core.run.requests import RequestBuilder
from oracle_core.run.waits.background import BackgroundWork
from oracle_core.run.waits.sweep import CutOffSweeper
from oracle_core.settings import Settings
from oracle_core.settling import Settling
from oracle_core.store.base import Checkpointer
from oracle_core.store.faceted import as_checkpointer
from oracle_core.store.facets import facet_of
from oracle_core.store.opening import open_store
from oracle_core.store.threads import ThreadStore
from oracle_core.telemetry.metrics import OracleMetrics
from oracle_core.values.attachments import Attachment
from oracle_core.values.events import Event
from oracle_core.values.limits import RunLimits
from oracle_core.values.output import OutputType
from oracle_core.values.result import RunResult
from oracle_core.values.run_options import RunOptions

log = logging.getLogger("oracle_core")


def _plugin_handle(oracle: Oracle) -> PluginHandle:
    """What plugin code gets of ``oracle`` (made per use: the oracle keeps no handle, so no
    reference cycle holds the oracle after its last user drops it)."""
    return PluginHandle(oracle, views=oracle._views)


class Oracle(Settling):
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
            ``settings.model`` (``ORACLE_MODEL``), else the offline demo model, whose first
            call logs a warning on the ``oracle_core`` logger (pass ``model="demo"`` to
            choose it without one).
        checkpointer: where thread state is saved; default SQLite at ``$ORACLE_HOME/oracle.db``.
            Any store that keeps threads will do: one that offers only some of the optional
            facets (leases, operations, credentials, usage; :mod:`oracle_core.store.facets`)
            runs plainly, and a feature that needs a facet it lacks fails naming both.
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
        observers: more :class:`~oracle_core.run.observe.RunObserver` objects, told of
            every event of every run after the oracle's own (traces, metrics).

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
        checkpointer: Checkpointer | ThreadStore | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        max_steps: int | None = None,
        tool_concurrency: int | None = None,
        tool_timeout: float | None = None,
        limits: RunLimits | None = None,
        surface: Surface | None = None,
        observers: Sequence[RunObserver] = (),
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.instructions = instructions
        chosen: dict[str, Any] = {"max_steps": max_steps, "tool_concurrency": tool_concurrency,
                                  "tool_timeout": tool_timeout}  # fmt: skip
        self.limits = chosen_limits(limits or self.settings.run_limits, **chosen)
        self._pool = SyncToolPool(self.limits.sync_tool_workers, self.settings.sync_tool_shares())
        self._states = PluginStates()
        self._views = RegistryViews()  # what plugin code reads of the registry, kept
        self.plugin_manager: pluggy.PluginManager = new_plugin_manager()
        with fewer_collections():  # restored after (plugins/collector.py)
            self._registry = assemble_plugins(
                self.settings, self._states, self.plugin_manager, plugins, entry_points, path
            )
        self._surface = choose_surface(surface, self.settings, self._registry)
        self._requests: RequestBuilder | None = None
        self._model = model
        self._checkpointer = as_checkpointer(checkpointer) if checkpointer is not None else None
        self._locks = ThreadLocks()
        self._deps: RunDeps | None = None
        self._background: BackgroundWork | None = None
        self._sweeper: CutOffSweeper | None = None
        self._start_lock: asyncio.Lock | None = None
        self._lifecycle: Lifecycle | None = None
        self._credentials = None
        self._closed = False
        self._observers = tuple(observers)
        self.metrics = OracleMetrics()  # what its runs did, for GET /metrics (docs/metrics.md)

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
        self._registry = replaced(self._registry, plugin)
        if self._deps is not None:
            self._deps = with_registry(self._deps, self.requests)

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
        direct path for ``openai/...`` strings, litellm for the rest, and litellm for all
        when ``ORACLE_MODEL_CLIENT=litellm``.
        """
        if not isinstance(self._model, Model):
            self._model = oracle_model(self._model, self.settings)
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
        return tier1_warning_of(self.settings, self._registry, self.surface)

    async def prompt_report(self, thread_id: str) -> dict[str, Any]:
        """What the next model call of ``thread_id`` would get, with token counts per part."""
        warnings = [w for w in [self.tier1_warning()] if w]
        return await prompt_report(
            self.requests, self.checkpointer, self.model, self.surface, thread_id, warnings
        )

    # -- lifecycle -------------------------------------------------------------------------------

    async def run_deps(self) -> RunDeps:
        """What runs of this oracle use (model, store, executor, middleware, limits).

        Starts the oracle first if needed (every plugin's ``oracle_startup`` hook, once).
        For embedding applications and tests that drive the run loop's parts directly.

        Raises:
            OracleClosedError: when the oracle was closed.
        """
        if self._closed:
            raise OracleClosedError("this oracle is closed: build a new Oracle to run again")
        if self._deps is not None:
            return self._deps
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._deps is None:
                if warning := self.tier1_warning():
                    log.warning("%s", warning)
                settings = self.settings
                self._lifecycle = Lifecycle(
                    self.plugin_manager, self._registry, timeout=settings.hook_timeout,
                    strict=settings.strict,
                )  # fmt: skip
                # Plugins whose startup failed are gone from here on: tools, routes, middleware.
                self._registry = await self._lifecycle.start(_plugin_handle(self))
                leases = facet_of(self.checkpointer, "leases")
                if self._sweeper is None and leases is not None:  # nothing resumes them here
                    await leases.mark_interrupted()
                self._background = BackgroundWork(self.checkpointer, self._pool, self.limits)
                self._deps = started_deps(
                    settings, self.requests, model=self.model, store=self.checkpointer,
                    oracle=_plugin_handle(self), pool=self._pool, credentials=self.credentials,
                    background=self._background, limits=self.limits, locks=self._locks,
                    observers=self._observers, metrics=self.metrics,
                )  # fmt: skip
        return self._deps

    async def start(self) -> None:
        """Run every plugin's ``oracle_startup`` hook, once; then the oracle is started.

        Raises:
            OracleClosedError: when the oracle was closed.
        """
        await self.run_deps()

    def resume_cut_off_runs(self) -> CutOffSweeper | None:
        """Have this oracle resume runs cut off by the end of their process (docs/scale-out.md).

        ``oracle serve`` calls it before it starts the oracle, then starts the sweeper; it
        is stopped when the oracle closes. An oracle that resumes cut-off runs does not
        mark them ``interrupted`` when it starts. Calling it again returns the same sweeper.

        Returns:
            The sweeper (not yet started), or ``None`` when ``ORACLE_RESUME_RUNS`` is off.

        Raises:
            OracleClosedError: when the oracle was closed.
        """
        if self._closed:
            raise OracleClosedError("this oracle is closed: build a new Oracle to run again")
        if not self.settings.resume_runs:
            return None
        if self._sweeper is None:
            self._sweeper = CutOffSweeper(
                self.run_deps,
                interval=self.limits.lease_ttl / 2,
                max_age=self.settings.resume_max_age,
                concurrency=self.settings.resume_concurrency,
            )
        return self._sweeper

    async def close(self) -> None:
        """Run every plugin's ``oracle_shutdown`` hook and close the store, once."""
        if self._closed:
            return
        self._closed = True
        if self._sweeper is not None:
            await self._sweeper.close()
        lifecycle, self._lifecycle, self._deps = self._lifecycle, None, None
        try:
            if lifecycle is not None:
                await lifecycle.stop(_plugin_handle(self))
        finally:
            if self._background is not None:
                await self._background.close()
            self._pool.close()
            if isinstance(self._model, Model):
                await self._model.aclose()
            if self._checkpointer is not None:
                await self._checkpointer.close()

    close_sync = sync_twin(
        close, closes=True, doc=":meth:`close` for scripts that used :meth:`run_sync`."
    )

    # -- runs ------------------------------------------------------------------------------------

    def thread_busy(self, thread_id: str) -> bool:
        """Whether a run is in progress on ``thread_id`` in this process."""
        return self._locks.busy(thread_id)

    async def stream(
        self,
        thread_id: str,
        message: str | None = None,
        *,
        user_id: str = "default",
        text_deltas: bool = True,
        tool_results: Mapping[str, str] | None = None,
        options: RunOptions | None = None,
        output_type: OutputType | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> AsyncIterator[Event]:
        """Run one user message on ``thread_id``, yielding events as they happen.

        Starts the oracle first if needed. Runs on one thread are serialized; the last
        event is always :class:`~oracle_core.RunFinished`. Closing the iterator early
        (``aclose()``) cancels the run and saves it as ``cancelled``. Every event is also
        published to the store's channel (``checkpointer.events``) for the thread's followers.

        Args:
            thread_id: the thread.
            message: what the user says; or, instead,
            tool_results: the results of the client tools' calls a ``waiting_for_client``
                run handed back, by call id: that run goes on with them.
            user_id: who the run acts for.
            text_deltas: yield the model's text as it arrives (never for a run with an
                output: its answer is checked first, then comes whole in ``done``).
            options: the caller's own tools and model options (:class:`~oracle_core.RunOptions`).
            output_type: the JSON the final answer must be (a pydantic model class or a JSON
                Schema; it replaces ``options.output``): the model is asked for it, and a
                wrong answer gets one repair turn before the run fails with
                :class:`~oracle_core.OutputValidationError` (docs/structured-output.md).
            attachments: files sent with ``message`` (:class:`~oracle_core.Attachment`:
                images and text files, as content parts after its text).

        Raises:
            ClientToolError: a client tool is named like a tool of the oracle (or its name or
                schema is not one a model can be offered).
            ToolResultsError: ``tool_results`` do not answer exactly the open calls.
            ValueError: neither or both of ``message`` and ``tool_results`` are given.
            OutputSchemaError: ``output_type`` is not a pydantic model nor a JSON Schema.
        """
        if (message is None) == (tool_results is None):
            raise ValueError("give a message, or tool_results to continue a run: one of them")
        options = (options or RunOptions()).for_run(output_type)  # its response_format added
        run = await begin_run(
            await self.run_deps(), thread_id, message, user_id=user_id, text_deltas=text_deltas,
            tool_results=tool_results, options=options, attachments=attachments,
        )  # fmt: skip
        async with aclosing(run.events()) as events:
            async for event in events:
                yield event

    async def run(
        self,
        thread_id: str,
        message: str | None = None,
        *,
        user_id: str = "default",
        tool_results: Mapping[str, str] | None = None,
        options: RunOptions | None = None,
        output_type: OutputType | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> RunResult:
        """Run one user message on ``thread_id`` to its answer and return the whole run.

        ``tool_results`` instead of a message continues a ``waiting_for_client`` run, and
        ``options`` adds the caller's own tools and model options, ``attachments`` files
        sent with the message (see :meth:`stream`).
        With ``output_type`` (a pydantic model class or a JSON Schema) the answer is JSON
        for it and :attr:`RunResult.output <oracle_core.RunResult.output>` its parsed value.
        """
        options = (options or RunOptions()).for_run(output_type)
        stream = self.stream(
            thread_id,
            message,
            user_id=user_id,
            text_deltas=False,
            tool_results=tool_results,
            options=options,
            attachments=attachments,
        )
        return RunResult.from_events(thread_id, [event async for event in stream], options.output)

    run_sync = sync_twin(run, doc=":meth:`run` for scripts, on an event loop the oracle keeps "
                         "between calls (close it with :meth:`close_sync`, or use ``with``).")  # fmt: skip
