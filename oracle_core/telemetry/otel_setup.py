"""Set up the OpenTelemetry SDK from the standard ``OTEL_*`` variables, for ``oracle serve``
and the CLI (docs/observability.md).

``OTEL_TRACES_EXPORTER`` and ``OTEL_METRICS_EXPORTER`` take what the SDK's own
auto-configuration takes: a comma-separated list of ``otlp`` (OTLP over HTTP/protobuf),
``console`` (each span or batch of metrics printed, on standard error here: standard output
is the command's) and ``none``. A signal is exported when its variable names an exporter,
or when an OTLP endpoint is set (``OTEL_EXPORTER_OTLP_ENDPOINT``, or the signal's own
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``..._METRICS_ENDPOINT``), which means ``otlp``;
``none`` or ``OTEL_SDK_DISABLED=true`` turn it off.

An application that embeds the oracle configures its own providers; this module is only for
the oracle's own commands, and it never replaces a provider that is already set. It needs
``oracle-core-runtime[otel]`` (the SDK and the OTLP/HTTP exporters), imported only when a
signal is asked for. What it installs is shut down when the process ends, within
:data:`~oracle_core.telemetry.otel_exit.EXIT_SECONDS` (:mod:`oracle_core.telemetry.otel_exit`).
"""

from __future__ import annotations

import atexit
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from oracle_core.telemetry.otel_exit import EXIT_SECONDS
from oracle_core.telemetry.otel_exit import shutdown as shutdown_within

log = logging.getLogger("oracle_core.telemetry")

Signal = Literal["traces", "metrics"]
"""The signals the oracle exports."""

EXPORTERS = ("otlp", "console", "none")
"""The exporter names ``OTEL_TRACES_EXPORTER`` and ``OTEL_METRICS_EXPORTER`` accept."""

TRACE_VARIABLES = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)
"""The variables that can ask for traces."""

METRIC_VARIABLES = (
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)
"""The variables that can ask for metrics."""

_VARIABLES: dict[Signal, tuple[str, str, str]] = {
    "traces": TRACE_VARIABLES,
    "metrics": METRIC_VARIABLES,
}
_MISSING = "pip install 'oracle-core-runtime[otel]'"


def exporters(env: Mapping[str, str], signal: Signal) -> list[str]:
    """The exporter names ``env`` asks for ``signal`` (``[]``: none), lowercased, in order."""
    if (env.get("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return []
    chosen, endpoint, own_endpoint = _VARIABLES[signal]
    names = [n.strip().lower() for n in (env.get(chosen) or "").split(",") if n.strip()]
    if "none" in names:
        return []
    if names:
        return list(dict.fromkeys(names))
    return ["otlp"] if (env.get(endpoint) or env.get(own_endpoint) or "").strip() else []


def traces_wanted(env: Mapping[str, str]) -> bool:
    """Whether ``env`` asks for traces (see the module's docs)."""
    return bool(exporters(env, "traces"))


def metrics_wanted(env: Mapping[str, str]) -> bool:
    """Whether ``env`` asks for OpenTelemetry metrics (see the module's docs)."""
    return bool(exporters(env, "metrics"))


@dataclass(frozen=True)
class Providers:
    """What :func:`configure_from_env` installed: a tracer and a meter provider, or ``None``.

    Attributes:
        tracer: the SDK tracer provider, or ``None``.
        meter: the SDK meter provider, or ``None``.
    """

    tracer: Any | None = None
    meter: Any | None = None

    def shutdown(self, timeout: float = EXIT_SECONDS) -> bool:
        """Send what is left and stop both, within ``timeout`` seconds; once (the end of the
        process does it otherwise). Returns whether they finished in time."""
        atexit.unregister(self.shutdown)
        return shutdown_within(self.tracer, self.meter, timeout=timeout)


def configure_from_env(env: Mapping[str, str]) -> Providers:
    """Install SDK providers exporting what ``env`` asks for (see the module's docs).

    OTLP exporters read their headers, timeout and compression from the standard
    ``OTEL_EXPORTER_OTLP_*`` variables; spans are sent in batches (``OTEL_BSP_*``), metrics
    every ``OTEL_METRIC_EXPORT_INTERVAL`` milliseconds; the resource has
    ``OTEL_SERVICE_NAME`` (``oracle`` when unset) and ``OTEL_RESOURCE_ATTRIBUTES``.

    Returns:
        The providers installed; a signal is left alone (``None``) when it was not asked
        for, a provider is already set (an application's), the SDK is not installed, or no
        exporter named is known (each logged, saying what to change).
    """
    traces, metrics = exporters(env, "traces"), exporters(env, "metrics")
    if not traces and not metrics:
        return Providers()
    try:
        from opentelemetry.sdk.resources import Resource

        # Resource.create adds OTEL_RESOURCE_ATTRIBUTES (read from the process environment).
        resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "oracle"})
        tracer = _tracer(env, traces, resource)
        meter = _meter(env, metrics, resource)
    except ImportError as error:
        log.warning(
            "OTEL_* variables ask for telemetry but %s is not installed: %s", error.name, _MISSING
        )
        return Providers()
    installed = Providers(tracer, meter)
    if installed.tracer is not None or installed.meter is not None:
        atexit.register(installed.shutdown)
    return installed


def _tracer(env: Mapping[str, str], names: list[str], resource: Any) -> Any | None:
    from opentelemetry import trace

    if not names or not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return None  # not asked for, or someone configured tracing already
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    processors: list[Any] = []
    for name in _known(names, "OTEL_TRACES_EXPORTER"):
        if name == "console":  # printed as each span ends: for trying traces locally
            processors.append(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            options = _endpoint(env, "TRACES", "/v1/traces")
            processors.append(BatchSpanProcessor(OTLPSpanExporter(**options)))
    if not processors:
        return None
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    for processor in processors:
        provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    return provider


def _meter(env: Mapping[str, str], names: list[str], resource: Any) -> Any | None:
    from opentelemetry import metrics

    from oracle_core.telemetry.metrics_otel import configured_meter_provider

    if not names or configured_meter_provider() is not None:
        return None
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        MetricExporter,
        PeriodicExportingMetricReader,
    )

    readers: list[PeriodicExportingMetricReader] = []
    for name in _known(names, "OTEL_METRICS_EXPORTER"):
        exporter: MetricExporter
        if name == "console":
            exporter = ConsoleMetricExporter(out=sys.stderr)
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

            exporter = OTLPMetricExporter(**_endpoint(env, "METRICS", "/v1/metrics"))
        readers.append(PeriodicExportingMetricReader(exporter))
    if not readers:
        return None
    provider = MeterProvider(metric_readers=readers, resource=resource, shutdown_on_exit=False)
    metrics.set_meter_provider(provider)
    return provider


def _known(names: list[str], variable: str) -> list[str]:
    """``names`` less the unknown ones, each logged with what is accepted."""
    for name in names:
        if name not in EXPORTERS:
            log.warning(
                "%s=%s: oracle does not know the exporter %r and leaves it out; use otlp "
                "(over HTTP), console or none",
                variable,
                ",".join(names),
                name,
            )
    return [n for n in names if n in EXPORTERS]


def _endpoint(env: Mapping[str, str], signal: str, path: str) -> dict[str, Any]:
    """The exporter's endpoint from ``env`` (it reads the other variables itself)."""
    endpoint = (env.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT") or "").strip()
    if endpoint:
        return {"endpoint": endpoint}
    base = (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip()
    if base:
        return {"endpoint": base.rstrip("/") + path}
    return {}


__all__ = [
    "EXPORTERS",
    "METRIC_VARIABLES",
    "TRACE_VARIABLES",
    "Providers",
    "configure_from_env",
    "exporters",
    "metrics_wanted",
    "traces_wanted",
]
