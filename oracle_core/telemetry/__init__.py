"""What operators see of runs: OpenTelemetry traces, Prometheus metrics (docs/observability.md)
and a log line per run (docs/server.md).

Each is a :class:`~oracle_core.run.observe.RunObserver` built from the settings by
:func:`default_observers`; an oracle adds the observers given to it in code after them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oracle_core.run.observe import RunObserver
    from oracle_core.settings import Settings
    from oracle_core.telemetry.metrics import OracleMetrics


def default_observers(
    settings: Settings, metrics: OracleMetrics | None = None
) -> list[RunObserver]:
    """The observers every oracle built with ``settings`` has: OpenTelemetry spans
    (telemetry/tracing.py; nothing is done until an SDK is configured), the run's ids in the
    log context and a line when it ends (telemetry/run_log.py), then the oracle's
    ``metrics`` when given (telemetry/metrics.py)."""
    from oracle_core.telemetry.run_log import RunLog
    from oracle_core.telemetry.tracing import TracingObserver, content_wanted

    content = content_wanted(settings.env)  # an error's text is content, in logs too
    observers: list[RunObserver] = [TracingObserver(content=content), RunLog(content=content)]
    if metrics is not None:  # the oracle's own (telemetry/metrics.py): its GET /metrics counts
        observers.append(metrics)
    return observers
