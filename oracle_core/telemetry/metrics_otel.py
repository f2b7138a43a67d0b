"""An oracle's metrics as OpenTelemetry instruments, when an SDK's meter provider is set.

The same figures as the Prometheus instruments, named the OpenTelemetry way (dots, units
apart): an OpenTelemetry-to-Prometheus pipeline gives back the Prometheus names
(``oracle.run.duration`` in ``s`` becomes ``oracle_run_duration_seconds``). The waits
pending are the exception: they are counted in the store at each Prometheus scrape, so only
``GET /metrics`` has them.
"""

from __future__ import annotations

from opentelemetry import metrics

from oracle_core.capabilities.meta_tools.finding import SEARCH
from oracle_core.version import __version__

METER_NAME = "oracle_core"
"""The name of the meter the instruments are made by (the instrumentation scope)."""


def configured_meter_provider() -> metrics.MeterProvider | None:
    """The global meter provider when an SDK configured one; ``None`` for the API's own
    (its proxy before any is set, or the no-op one), which would record nothing."""
    provider = metrics.get_meter_provider()
    if type(provider).__module__.startswith("opentelemetry.metrics"):
        return None
    return provider


class OtelMetrics:
    """The OpenTelemetry instruments of one oracle (a :class:`~oracle_core.telemetry.metrics.MetricSink`).

    Args:
        provider: the meter provider to make them with.
    """

    def __init__(self, provider: metrics.MeterProvider) -> None:
        meter = provider.get_meter(METER_NAME, __version__)
        self._runs = meter.create_counter("oracle.runs", "{run}", "Runs ended, by status.")
        self._run_seconds = meter.create_histogram(
            "oracle.run.duration", "s", "Seconds from a run's start to its end."
        )
        self._model_seconds = meter.create_histogram(
            "oracle.model_call.duration", "s", "Seconds a model call took, by model."
        )
        self._tokens = meter.create_counter(
            "oracle.tokens", "{token}", "Tokens the provider reported, by model and direction."
        )
        self._tool_calls = meter.create_counter(
            "oracle.tool_calls", "{call}", "Tool calls, by plugin and outcome."
        )
        self._refusals = meter.create_counter("oracle.refusals", "{call}", "Tool calls refused.")
        self._searches = meter.create_counter(
            "oracle.searches", "{call}", f"{SEARCH.name} calls answered."
        )
        self._search_seconds = meter.create_histogram(
            "oracle.search.duration", "s", "Seconds from a search call to its result."
        )
        self._lease_seconds = meter.create_histogram(
            "oracle.lease_wait", "s", "Seconds a new run waited for its thread."
        )

    def run_finished(self, status: str, seconds: float | None) -> None:
        """Count a run that ended with ``status``; time it when its start was seen."""
        self._runs.add(1, {"status": status})
        if seconds is not None:
            self._run_seconds.record(seconds)

    def model_call(self, model: str, seconds: float) -> None:
        """Time a call of ``model``."""
        self._model_seconds.record(seconds, {"model": model})

    def tokens(self, model: str, prompt: int, completion: int) -> None:
        """Count the tokens of one call of ``model``."""
        self._tokens.add(max(prompt, 0), {"model": model, "direction": "input"})
        self._tokens.add(max(completion, 0), {"model": model, "direction": "output"})

    def tool_call(self, plugin: str, outcome: str) -> None:
        """Count a call of a tool of ``plugin`` by its outcome."""
        self._tool_calls.add(1, {"plugin": plugin, "outcome": outcome})

    def refusal(self) -> None:
        """Count a refused call."""
        self._refusals.add(1)

    def search(self, seconds: float | None) -> None:
        """Count a search; time it when its call was seen."""
        self._searches.add(1)
        if seconds is not None:
            self._search_seconds.record(seconds)

    def lease_wait(self, seconds: float) -> None:
        """Time a new run's wait for its thread."""
        self._lease_seconds.record(seconds)
