"""A run's anchor: the span context every segment of one run descends from or links to.

A run that waited for a person and was resumed, maybe in another process, is a second
segment with the same run id. Its anchor is derived from the run id alone, so every
segment, in whatever process, is in the same trace without anything being saved.
"""

from __future__ import annotations

import hashlib

from opentelemetry.trace import SpanContext, TraceFlags


def run_anchor(run_id: str) -> SpanContext:
    """The remote span context every segment of run ``run_id`` descends from or links to.

    Its trace id is the first 32 hex digits of the SHA-256 of the run id, its span id the
    next 16: any process computes the same one, so a resumed run needs nothing saved.
    """
    digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()
    return SpanContext(
        trace_id=int(digest[:32], 16) or 1,
        span_id=int(digest[32:48], 16) or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
