"""Assembling an oracle: its plugins, its surface, its model, its wait checks, its run deps.

The :class:`~oracle_core.Oracle` calls these as it is built and as it starts; each is a
plain function of what it is given, so the facade keeps only its lifecycle and delegations.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from typing import Any

import pluggy

from oracle_core.authoring.host import OracleHandle, PluginHost, PluginStates
from oracle_core.capabilities.prompt import tier1_warning
from oracle_core.capabilities.state import Capabilities
from oracle_core.capabilities.surface import (
    Catalog,
    Specialist,
    Surface,
    specialist_tools,
    surface_from_config,
)
from oracle_core.credentials.sealed import Credentials
from oracle_core.errors import PluginLoadError, StrictPluginError, SurfaceError
from oracle_core.models.base import Model
from oracle_core.models.cost import PriceTable
from oracle_core.models.demo import DemoModel
from oracle_core.plugins.discovery import did_you_mean, select, unmatched
from oracle_core.plugins.installed import installed_plugins
from oracle_core.plugins.loader import Candidate, assemble, source_for_object
from oracle_core.plugins.mcp.assembly import add_mcp_servers, split_servers
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.run.budgets import budget_guard
from oracle_core.run.calls import WaitCheck
from oracle_core.run.chain import MiddlewareChain
from oracle_core.run.deps import RunDeps
from oracle_core.run.executor import ToolExecutor
from oracle_core.run.guards import Guards
from oracle_core.run.locks import ThreadLocks
from oracle_core.run.observe import Observers, RunObserver
from oracle_core.run.pool import SyncToolPool
from oracle_core.run.requests import RequestBuilder
from oracle_core.run.threads import ThreadCache
from oracle_core.run.usage_limits import UsageLimits
from oracle_core.run.waits.approvals import ApprovalCheck, ApprovalPolicy
from oracle_core.run.waits.background import BackgroundWork
from oracle_core.run.waits.connections import ConnectionCheck
from oracle_core.run.waits.opening import open_operations
from oracle_core.settings import Settings
from oracle_core.store.base import Checkpointer
from oracle_core.telemetry import default_observers
from oracle_core.telemetry.metrics import OracleMetrics
from oracle_core.values.count_memo import CountMemo
from oracle_core.values.limits import RunLimits
from oracle_core.values.messages import ModelRequest, ModelResponse

log = logging.getLogger("oracle_core.assembly")

TIER1_COUNTS = "tier1-tokens.json"
"""The file under ``$ORACLE_HOME/cache`` that remembers the Tier-1 block's token count."""

NO_MODEL_WARNING = (
    "no model is set, so this oracle runs the offline demo model (canned answers that call "
    'tools); set ORACLE_MODEL or pass Oracle(model=...), or model="demo" to choose it'
)
"""Logged by the first model call of an oracle whose model neither ``model=`` nor
``ORACLE_MODEL`` names (an oracle that never calls its model, as ``oracle mcp``, says nothing)."""


class FallbackDemo(DemoModel):
    """The demo model an oracle falls back to when no model is set: its first call logs
    :data:`NO_MODEL_WARNING`, since a library user who forgot ``model=`` would otherwise get
    canned answers and tool calls they never asked for, without a word."""

    _warned = False

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The demo's answer; the first call of this model logs :data:`NO_MODEL_WARNING`."""
        if not self._warned:
            self._warned = True
            logging.getLogger("oracle_core").warning(NO_MODEL_WARNING)
        return await super().complete(request)


def assemble_plugins(
    settings: Settings,
    states: PluginStates,
    manager: pluggy.PluginManager,
    plugins: Sequence[Any],
    entry_points: bool,
    path: Sequence[str] | None,
) -> Registry:
    """Import, register and validate the plugins given and (``entry_points``) installed,
    once the whole ``oracle.toml`` is checked (:meth:`Settings.check_config`).

    Raises:
        ConfigError: ``oracle.toml`` has a bad or unknown table or key (SurfaceError for
            a bad ``[surface]``), naming the file, the line, the key and the fix.
        StrictPluginError: when ``settings.strict`` is set and any plugin failed.
    """
    settings.check_config()  # every table, also those read only once the oracle starts
    plugins, servers = split_servers(plugins)
    candidates = [Candidate(source_for_object(obj), obj) for obj in plugins]
    early: list[PluginLoadError] = []
    installed: list[str] = []
    disabled: list[str] = []
    if entry_points:
        found = installed_plugins(path, settings.home / "cache")  # scanned once per install
        installed = [name for s in found for name in (s.name, s.distribution) if name]
        sources, missing = select(found, settings.load_plugins, settings.disable_plugins)
        candidates += [Candidate(source) for source in sources]
        early += [
            PluginLoadError(
                f"ORACLE_LOAD_PLUGINS names {name!r}, but no installed plugin or distribution "
                f"has that name{did_you_mean(name, installed)}: check the spelling, or pip "
                "install it",
                plugin=name,
            )
            for name in missing
        ]
        disabled = unmatched(found, settings.disable_plugins)
    host = PluginHost(settings, states)
    registry = assemble(candidates, manager=manager, host=host, failures=early)
    registry = add_mcp_servers(
        registry, manager=manager, host=host, code=servers, unmatched_disabled=disabled
    )
    if entry_points:  # only then is every plugin that could read a table known
        settings.warn_unknown_plugins({*installed, *(p.name for p in registry)})
    if settings.strict and registry.failures:
        raise StrictPluginError(list(registry.failures))
    return registry


def choose_surface(surface: Surface | None, settings: Settings, registry: Registry) -> Surface:
    """The surface given, else ``[surface]`` of ``oracle.toml``; checked against the plugins.

    Raises:
        SurfaceError: for anything but a catalog or a specialist naming tools it has.
    """
    if surface is None:
        source = f"[surface] in {settings.config_path}"
        surface = surface_from_config(settings.surface_config(), registry, source=source)
    if not isinstance(surface, Catalog | Specialist):
        raise SurfaceError(
            f"Oracle(surface=...) takes Catalog() or Specialist(tools=[...]), not "
            f"{type(surface).__name__}"
        )
    if isinstance(surface, Specialist):
        specialist_tools(surface, registry)  # fails now, not on the first run
    return surface


def chosen_limits(limits: RunLimits, **chosen: Any) -> RunLimits:
    """``limits`` with the limits given one by one (``max_steps=...``; ``None``: not given)."""
    return dataclasses.replace(limits, **{k: v for k, v in chosen.items() if v is not None})


def choose_model(model: str | None, settings: Settings) -> Model:
    """The model of a model string (``settings.model`` when none), else the demo model.

    A name of ``[aliases]`` in ``oracle.toml`` stands for its model string.

    A model string picks its client (:func:`~oracle_core.models.openai.model_for`): the
    direct path for ``openai/...`` strings, litellm for the rest. Imported here, on first
    use, so building an oracle imports neither. Without ``settings.api_key`` nor the
    provider's own variable, a key stored by ``oracle keys set`` is used. The operator's
    model-call settings (``[models."<model>"]``, ``ORACLE_MODEL_TIMEOUT``, ...; see
    :meth:`Settings.model_call_settings <oracle_core.settings.Settings.model_call_settings>`)
    go to the model: its timeout, retries, and ``max_tokens`` and ``temperature`` options.
    """
    name = model or settings.model
    if name:
        name = settings.resolve_model(name)  # an [aliases] name, or the model string
        from oracle_core.models.openai import model_for
        from oracle_core.settings.keys import stored_key_for

        # A key stored with `oracle keys set` when none is given (settings/keys.py).
        key = settings.api_key or stored_key_for(name, settings.home, settings.env or os.environ)
        calls = settings.model_call_settings(name).model_arguments()
        return model_for(name, api_base=settings.api_base, api_key=key, env=settings.env, **calls)
    return DemoModel()


def oracle_model(model: Model | str | None, settings: Settings) -> Model:
    """The model an oracle runs: the one given, else the model of the string given or of
    ``settings.model`` (:func:`choose_model`), else :class:`FallbackDemo`."""
    if isinstance(model, Model):
        return model
    if model or settings.model:
        return choose_model(model, settings)
    return FallbackDemo()


def tier1_warning_of(settings: Settings, registry: Registry, surface: Surface) -> str | None:
    """A warning when the Tier-1 block costs more than ``settings.tier1_budget`` tokens
    (``None`` on a specialist surface, which has no Tier-1 block)."""
    if isinstance(surface, Specialist):
        return None
    memo = CountMemo(settings.home / "cache" / TIER1_COUNTS)
    return tier1_warning(registry, settings.tier1_budget, memo)


def wait_checks(settings: Settings, credentials: Credentials) -> list[WaitCheck]:
    """The wait hook's checks, asked in order about every call (docs/waits.md)."""
    policy = ApprovalPolicy.of(settings.approval_rules())
    return [ApprovalCheck(policy), ConnectionCheck(credentials)]


def tool_executor(
    registry: Registry,
    limits: RunLimits,
    oracle: OracleHandle,
    pool: SyncToolPool,
    credentials: Credentials,
    background: BackgroundWork,
) -> ToolExecutor:
    """The tool executor of ``registry``: wait checks, background calls, capability state."""
    settings = oracle.settings
    return ToolExecutor(
        registry,
        limits,
        oracle,
        pool,
        waits=wait_checks(settings, credentials),
        background=background,
        capabilities=Capabilities(registry, settings=settings, operations=background),
    )


def run_guards(
    settings: Settings, limits: RunLimits, store: Checkpointer, registry: Registry | None = None
) -> Guards:
    """What may stop a run before it spends more (run/guards.py), asked in this order."""
    prices = PriceTable()  # read once, on first need, for both guards
    usage = UsageLimits(limits, prices)
    if warning := usage.check_model(settings.model):  # said at start; each run says it too
        log.warning("%s", warning)
    # The ledger first: it notes each call before a later guard may stop the run on it.
    tools = registry.tools if registry is not None else {}
    ledger = budget_guard(
        settings,
        store,
        plugin_of=lambda name: tools[name].plugin.name if name in tools else "",
        prices=prices,
    )
    return Guards([ledger, usage])


def build_deps(
    model: Model,
    store: Checkpointer,
    requests: RequestBuilder,
    executor: ToolExecutor,
    limits: RunLimits,
    locks: ThreadLocks,
    observers: Observers | None = None,
    guards: Guards | None = None,
) -> RunDeps:
    """What runs use, with the waits' opening step handed to the loop."""
    return RunDeps(
        model=model,
        store=store,
        requests=requests,
        executor=executor,
        gate=requests.gate,
        capabilities=executor.capabilities,
        middleware=MiddlewareChain(requests.registry.middleware()),
        limits=limits,
        locks=locks,
        threads=ThreadCache(),
        open_operations=open_operations,
        observers=observers or Observers(),
        guards=guards or Guards(),
    )


def with_registry(deps: RunDeps, requests: RequestBuilder) -> RunDeps:
    """``deps`` for the registry of ``requests`` (a plugin replaced), the rest kept."""
    old, registry = deps.executor, requests.registry
    executor = ToolExecutor(
        registry,
        deps.limits,
        old.oracle,
        old.pool,
        waits=old.waits,
        background=old.background,
        capabilities=Capabilities(
            registry, settings=old.capabilities.settings, operations=old.capabilities.operations
        ),
    )
    middleware = MiddlewareChain(registry.middleware())
    return dataclasses.replace(
        deps,
        requests=requests,
        executor=executor,
        gate=requests.gate,
        capabilities=executor.capabilities,
        middleware=middleware,
    )


def started_deps(
    settings: Settings,
    requests: RequestBuilder,
    *,
    model: Model,
    store: Checkpointer,
    oracle: OracleHandle,
    pool: SyncToolPool,
    credentials: Credentials,
    background: BackgroundWork,
    limits: RunLimits,
    locks: ThreadLocks,
    observers: Sequence[RunObserver],
    metrics: OracleMetrics,
) -> RunDeps:
    """What the runs of an oracle whose plugins have started use: its tool executor, its
    observers (the default ones of ``settings``, then ``observers``), its guards."""
    registry = requests.registry
    executor = tool_executor(registry, limits, oracle, pool, credentials, background)
    seeing = Observers([*default_observers(settings, metrics), *observers])
    guards = run_guards(settings, limits, store, registry)
    return build_deps(model, store, requests, executor, limits, locks, seeing, guards)


def replaced(registry: Registry, plugin: Plugin) -> Registry:
    """``registry`` with ``plugin`` in the place of the plugin of the same name.

    Raises:
        KeyError: when it has no plugin called ``plugin.name``.
    """
    if plugin.name not in registry:
        raise KeyError(f"the oracle has no plugin {plugin.name!r} to replace")
    return Registry(
        plugins={n: plugin if n == plugin.name else p for n, p in registry.plugins.items()},
        failures=registry.failures,
        warnings=registry.warnings,
        core=registry.core,
    )
