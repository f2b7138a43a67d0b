"""Metrics of runs: what an oracle's runs did, counted for Prometheus and OpenTelemetry.

:class:`OracleMetrics` is a :class:`~oracle_core.run.observe.RunObserver`: it turns a run's
events (:mod:`oracle_core.values.events`) into figures (runs by status, durations, tokens,
tool calls, refusals, searches, lease waits) and hands each to its sinks:

- Prometheus (:mod:`oracle_core.telemetry.metrics_prometheus`), once something asks for it
  with :meth:`OracleMetrics.prometheus` (``oracle serve`` does, for ``GET /metrics``): a
  ``CollectorRegistry`` of this oracle's own, never the process-wide one;
- OpenTelemetry (:mod:`oracle_core.telemetry.metrics_otel`), when a meter provider of an
  SDK is configured when the oracle's first run starts (or one is given).

Without either a run costs one check per event. Durations are read from the monotonic
clock as the events are observed; what one run keeps between its events is in its
``state.notes`` under :data:`NOTES_KEY`. Every label comes from a bounded set (statuses,
models, plugin names, outcomes): never thread, run or user ids. docs/metrics.md lists
every metric.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from oracle_core.capabilities.meta_tools import META_TOOL_DEFINITIONS
from oracle_core.capabilities.meta_tools.finding import SEARCH
from oracle_core.store.facets import facet_of
from oracle_core.values.events import (
    ModelCallStarted,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from oracle_core.values.operations import OPEN_STATUSES, OPERATION_KINDS

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider

    from oracle_core.plugins.registry import Registry
    from oracle_core.run.state import RunState
    from oracle_core.store.operations import OperationStore
    from oracle_core.telemetry.metrics_prometheus import PrometheusMetrics
    from oracle_core.values.events import Event

NOTES_KEY = "oracle_core.metrics"
"""The key of :attr:`RunState.notes <oracle_core.run.state.RunState.notes>` this observer keeps
a run's start times under."""

_META_TOOL_NAMES = frozenset(d.name for d in META_TOOL_DEFINITIONS)

CORE_PLUGIN = "core"
"""The ``plugin`` label of the meta-tools' calls (they belong to no plugin)."""

UNKNOWN = "unknown"
"""The label of a tool no plugin has (a made-up name) or of a model not known yet."""

MAX_PENDING_COUNTED = 10_000
"""Open operations of each status a scrape counts at most (the gauge is capped there)."""


class MetricSink(Protocol):
    """Where figures go: Prometheus instruments, OpenTelemetry instruments."""

    def run_finished(self, status: str, seconds: float | None) -> None:
        """A run ended with ``status``, after ``seconds`` (``None``: its start was not seen)."""

    def model_call(self, model: str, seconds: float) -> None:
        """A call of ``model`` answered after ``seconds``."""

    def tokens(self, model: str, prompt: int, completion: int) -> None:
        """The tokens ``model`` read (``prompt``) and wrote (``completion``) in one call."""

    def tool_call(self, plugin: str, outcome: str) -> None:
        """A tool of ``plugin`` was called: ``ok``, ``error`` or ``refused``."""

    def refusal(self) -> None:
        """A call was refused by the gate (a tool not shown to the model) or a check."""

    def search(self, seconds: float | None) -> None:
        """A call of the search meta-tool answered after ``seconds`` (``None``: not timed)."""

    def lease_wait(self, seconds: float) -> None:
        """A new run waited ``seconds`` for its thread before it began."""


@dataclass
class _RunNotes:
    """One run's start times (monotonic seconds), kept between its events."""

    started: float | None = None
    model_call: float | None = None
    searches: dict[str, float] = field(default_factory=dict)


class OracleMetrics:
    """The metrics of one oracle: an observer of its runs, and their Prometheus registry.

    Args:
        meter_provider: an OpenTelemetry ``MeterProvider`` to record to as well; default
            the global one, when an SDK's is configured by the oracle's first run event.
    """

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        self._meter_provider = meter_provider
        self._sinks: list[MetricSink] = []
        self._prometheus: PrometheusMetrics | None = None
        self._otel_checked = False

    def prometheus(self) -> PrometheusMetrics:
        """This oracle's Prometheus metrics, built (and recorded from then on) at first ask.

        Raises:
            ImportError: when ``prometheus-client`` is not installed (it comes with
                ``pip install 'oracle-core-runtime[server]'``).
        """
        if self._prometheus is None:
            from oracle_core.telemetry.metrics_prometheus import PrometheusMetrics

            self._prometheus = PrometheusMetrics()
            self._sinks.append(self._prometheus)
        return self._prometheus

    async def render(self, store: OperationStore, accept: str = "") -> tuple[bytes, str]:
        """Every Prometheus metric with the waits pending counted in ``store`` now, and its
        content type (see :meth:`PrometheusMetrics.render
        <oracle_core.telemetry.metrics_prometheus.PrometheusMetrics.render>`).

        Waits are counted at each scrape rather than from events: another process may
        settle them (a decision over HTTP, an expired deadline).

        Raises:
            ImportError: when ``prometheus-client`` is not installed.
        """
        metrics = self.prometheus()
        metrics.waits_pending(await pending_waits(store))
        return metrics.render(accept)

    def observe(self, registry: Registry, state: RunState, event: Event) -> None:
        """Count ``event`` of the run ``state`` in every sink (see the module's docs)."""
        if not self._otel_checked:
            self._otel_checked = True
            self._add_otel()
        if not self._sinks:
            return
        notes = state.notes.get(NOTES_KEY)
        if notes is None:
            notes = state.notes[NOTES_KEY] = _RunNotes()
        now = time.monotonic()
        if isinstance(event, RunStarted):
            notes.started = now
            if state.record.steps == 0:  # a new turn: its record was made when it was asked
                waited = max(0.0, time.time() - state.record.created_at)
                self._each(lambda sink: sink.lease_wait(waited))
        elif isinstance(event, ModelCallStarted):
            notes.model_call = now
        elif isinstance(event, UsageEvent):
            model = state.record.model or UNKNOWN
            if notes.model_call is not None:
                took_model = now - notes.model_call
                self._each(lambda sink: sink.model_call(model, took_model))
                notes.model_call = None
            usage = event.usage
            self._each(
                lambda sink: sink.tokens(model, usage.prompt_tokens, usage.completion_tokens)
            )
        elif isinstance(event, ToolCallEvent):
            if event.name == SEARCH.name:
                notes.searches[event.id] = now
        elif isinstance(event, ToolResultEvent):
            plugin, outcome = plugin_of(registry, event.name), outcome_of(event)
            self._each(lambda sink: sink.tool_call(plugin, outcome))
            if event.refused:
                self._each(lambda sink: sink.refusal())
            began = notes.searches.pop(event.id, None)
            if event.name == SEARCH.name and not event.refused:
                took = None if began is None else now - began
                self._each(lambda sink: sink.search(took))
        elif isinstance(event, RunFinished):
            lasted = None if notes.started is None else now - notes.started
            status = event.status
            self._each(lambda sink: sink.run_finished(status, lasted))
            state.notes.pop(NOTES_KEY, None)

    def _each(self, record: Callable[[MetricSink], None]) -> None:
        for sink in self._sinks:
            record(sink)

    def _add_otel(self) -> None:
        from oracle_core.telemetry.metrics_otel import OtelMetrics, configured_meter_provider

        provider = self._meter_provider or configured_meter_provider()
        if provider is not None:
            self._sinks.append(OtelMetrics(provider))


def plugin_of(registry: Registry, tool: str) -> str:
    """The ``plugin`` label of a call of ``tool``: its plugin, ``core`` or ``unknown``."""
    if tool in _META_TOOL_NAMES:
        return CORE_PLUGIN
    bound = registry.tools.get(tool)
    return bound.plugin.name if bound is not None else UNKNOWN


def outcome_of(event: ToolResultEvent) -> str:
    """The ``outcome`` label of a tool result: ``refused``, ``error`` or ``ok``."""
    if event.refused:
        return "refused"
    return "error" if event.is_error else "ok"


async def pending_waits(store: OperationStore) -> Mapping[str, int]:
    """How many operations of each kind are open (pending or running) in ``store`` now."""
    counts: dict[str, int] = dict.fromkeys(OPERATION_KINDS, 0)
    if facet_of(store, "operations") is None:  # a store without operations has none open
        return counts
    for status in sorted(OPEN_STATUSES):
        for operation in await store.list_operations(status=status, limit=MAX_PENDING_COUNTED):
            counts[operation.kind] = counts.get(operation.kind, 0) + 1
    return counts
