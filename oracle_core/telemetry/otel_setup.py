"""Set up the OpenTelemetry SDK from the standard ``OTEL_*`` variables, for ``oracle serve``
and the CLI (docs/observability.md).

An application that embeds the oracle configures its own tracer provider; this module is
only for the oracle's own commands, and it never replaces a provider that is already set.
It needs ``oracle-core-runtime[otel]`` (the SDK and the OTLP/HTTP exporter), imported only
when traces are asked for.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("oracle_core.telemetry")

TRACE_VARIABLES = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)


def traces_wanted(env: Mapping[str, str]) -> bool:
    """Whether ``env`` asks for traces: an OTLP endpoint, or ``OTEL_TRACES_EXPORTER`` set to
    anything but ``none`` (``OTEL_SDK_DISABLED=true`` turns everything off)."""
    if (env.get("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return False
    exporter = (env.get("OTEL_TRACES_EXPORTER") or "").strip().lower()
    if exporter == "none":
        return False
    return bool(exporter) or any((env.get(v) or "").strip() for v in TRACE_VARIABLES[1:])


def configure_from_env(env: Mapping[str, str]) -> Any | None:
    """Install an SDK tracer provider exporting over OTLP/HTTP, if ``env`` asks for traces.

    The exporter reads its endpoint, headers, timeout and compression from the standard
    ``OTEL_EXPORTER_OTLP_*`` variables, and the resource its attributes from
    ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` (service name ``oracle`` when
    unset); spans are sent in batches (``OTEL_BSP_*``).

    Returns:
        The provider installed, or ``None``: traces were not asked for, a provider is
        already set (an application's: it is left alone), or the SDK is not installed
        (logged, with the extra to install). Only ``otlp`` is supported as the exporter.
    """
    if not traces_wanted(env):
        return None
    from opentelemetry import trace

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return None  # someone configured tracing already
    exporter_name = (env.get("OTEL_TRACES_EXPORTER") or "otlp").strip().lower()
    if exporter_name.split(",")[0].strip() != "otlp":
        log.warning(
            "OTEL_TRACES_EXPORTER=%s is not supported by oracle; only otlp (over HTTP) is",
            exporter_name,
        )
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "traces were asked for (OTEL_* variables) but the OpenTelemetry SDK is not "
            "installed: pip install 'oracle-core-runtime[otel]'"
        )
        return None
    # Resource.create adds OTEL_RESOURCE_ATTRIBUTES (read from the process environment).
    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "oracle"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(**_exporter_options(env))))
    trace.set_tracer_provider(provider)
    return provider


def _exporter_options(env: Mapping[str, str]) -> dict[str, Any]:
    """The exporter's endpoint from ``env`` (it reads the other variables itself)."""
    endpoint = (env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or "").strip()
    if endpoint:
        return {"endpoint": endpoint}
    base = (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip()
    if base:
        return {"endpoint": base.rstrip("/") + "/v1/traces"}
    return {}


def shutdown(provider: Any | None) -> None:
    """Flush and stop ``provider`` (one :func:`configure_from_env` returned); ``None``: nothing."""
    if provider is not None:
        try:
            provider.shutdown()
        except Exception:
            log.exception("the tracer provider did not shut down cleanly")
