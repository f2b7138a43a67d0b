"""Flushing what OpenTelemetry holds when a command ends, within a bound.

An exporter's last send happens when its provider shuts down, at the end of the process.
Against a collector that refuses connections the OTLP exporter retries with a growing
backoff (about 8 s in all); against one that accepts and never answers it waits out its
request timeout (10 s by default). Neither may hold up ``oracle ask``'s exit: the
providers are shut down in a thread of their own, and after :data:`EXIT_SECONDS` the
process goes on without them (what was not sent is dropped, and a warning says so).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger("oracle_core.telemetry")

EXIT_SECONDS = 0.75
"""The longest the end of a command waits for spans and metrics to be sent."""


def shutdown(*providers: Any | None, timeout: float = EXIT_SECONDS) -> bool:
    """Flush and stop each of ``providers`` (``None`` ones are skipped), waiting at most
    ``timeout`` seconds in all.

    Returns:
        Whether every provider finished in time. One that did not is left to finish in a
        daemon thread, which the end of the process stops; a warning names the bound.
    """
    present = [p for p in providers if p is not None]
    if not present:
        return True
    done = threading.Event()

    def stop() -> None:
        for provider in present:
            try:
                provider.shutdown()
            except Exception:
                log.exception(
                    "the OpenTelemetry %s did not shut down cleanly", type(provider).__name__
                )
        done.set()

    threading.Thread(target=stop, name="oracle-otel-shutdown", daemon=True).start()
    if done.wait(timeout):
        return True
    log.warning(
        "OpenTelemetry: spans and metrics not yet sent were dropped: the exporter did not "
        "finish within %.2f s (is the OTLP endpoint, OTEL_EXPORTER_OTLP_ENDPOINT, up?)",
        timeout,
    )
    return False


__all__ = ["EXIT_SECONDS", "shutdown"]
