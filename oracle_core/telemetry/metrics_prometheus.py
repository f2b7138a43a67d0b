"""An oracle's metrics as Prometheus instruments, in a registry of its own.

Imported only when Prometheus metrics are asked for
(:meth:`~oracle_core.telemetry.metrics.OracleMetrics.prometheus`): ``prometheus_client`` is
not imported by an oracle that nobody scrapes. Every instrument is in this object's own
``CollectorRegistry``, so two oracles in one process never count into each other.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import choose_encoder

from oracle_core.capabilities.meta_tools.finding import SEARCH
from oracle_core.values.operations import OPERATION_KINDS

RUN_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Bucket bounds (seconds) of ``oracle_run_duration_seconds``."""

MODEL_CALL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
"""Bucket bounds (seconds) of ``oracle_model_call_duration_seconds``."""

SEARCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
"""Bucket bounds (seconds) of ``oracle_search_duration_seconds``."""

LEASE_WAIT_BUCKETS = (0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0)
"""Bucket bounds (seconds) of ``oracle_lease_wait_seconds``."""


class PrometheusMetrics:
    """The Prometheus instruments of one oracle (a :class:`~oracle_core.telemetry.metrics.MetricSink`).

    Attributes:
        registry: the ``CollectorRegistry`` holding them, this oracle's alone.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._runs = Counter("oracle_runs", "Runs ended, by status.", ["status"], registry=r)
        self._run_seconds = Histogram(
            "oracle_run_duration_seconds",
            "Seconds from a run's start to its end (each resumed part apart).",
            buckets=RUN_BUCKETS,
            registry=r,
        )
        self._model_seconds = Histogram(
            "oracle_model_call_duration_seconds",
            "Seconds a model call took, by model.",
            ["model"],
            buckets=MODEL_CALL_BUCKETS,
            registry=r,
        )
        self._tokens = Counter(
            "oracle_tokens",
            "Tokens the provider reported, by model and direction (input, output).",
            ["model", "direction"],
            registry=r,
        )
        self._tool_calls = Counter(
            "oracle_tool_calls",
            "Tool calls, by plugin (core: the meta-tools) and outcome (ok, error, refused).",
            ["plugin", "outcome"],
            registry=r,
        )
        self._refusals = Counter(
            "oracle_refusals", "Tool calls refused (a tool the model was not shown).", registry=r
        )
        self._searches = Counter("oracle_searches", f"{SEARCH.name} calls answered.", registry=r)
        self._search_seconds = Histogram(
            "oracle_search_duration_seconds",
            f"Seconds from a {SEARCH.name} call to its result.",
            buckets=SEARCH_BUCKETS,
            registry=r,
        )
        self._waits = Gauge(
            "oracle_waits_pending",
            "Operations still open (pending or running) in the store, by kind, at the scrape.",
            ["kind"],
            registry=r,
        )
        self._lease_seconds = Histogram(
            "oracle_lease_wait_seconds",
            "Seconds a new run waited for its thread (held by another run) before it began.",
            buckets=LEASE_WAIT_BUCKETS,
            registry=r,
        )
        for kind in OPERATION_KINDS:
            self._waits.labels(kind=kind).set(0)

    def run_finished(self, status: str, seconds: float | None) -> None:
        """Count a run that ended with ``status``; time it when its start was seen."""
        self._runs.labels(status=status).inc()
        if seconds is not None:
            self._run_seconds.observe(seconds)

    def model_call(self, model: str, seconds: float) -> None:
        """Time a call of ``model``."""
        self._model_seconds.labels(model=model).observe(seconds)

    def tokens(self, model: str, prompt: int, completion: int) -> None:
        """Count the tokens of one call of ``model``."""
        self._tokens.labels(model=model, direction="input").inc(max(prompt, 0))
        self._tokens.labels(model=model, direction="output").inc(max(completion, 0))

    def tool_call(self, plugin: str, outcome: str) -> None:
        """Count a call of a tool of ``plugin`` by its outcome."""
        self._tool_calls.labels(plugin=plugin, outcome=outcome).inc()

    def refusal(self) -> None:
        """Count a refused call."""
        self._refusals.inc()

    def search(self, seconds: float | None) -> None:
        """Count a search; time it when its call was seen."""
        self._searches.inc()
        if seconds is not None:
            self._search_seconds.observe(seconds)

    def lease_wait(self, seconds: float) -> None:
        """Time a new run's wait for its thread."""
        self._lease_seconds.observe(seconds)

    def waits_pending(self, counts: Mapping[str, int]) -> None:
        """Set the open operations of each kind (every known kind is set, 0 when absent)."""
        for kind in {*OPERATION_KINDS, *counts}:
            self._waits.labels(kind=kind).set(counts.get(kind, 0))

    def render(self, accept: str = "") -> tuple[bytes, str]:
        """Every metric, and its content type, in the format a scraper's ``Accept`` header
        asks for: OpenMetrics when it asks for it, else the Prometheus text format
        (``text/plain; version=0.0.4``)."""
        encode, content_type = choose_encoder(accept)
        return encode(self.registry), content_type
