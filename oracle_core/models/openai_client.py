"""The openai SDK's client with one change: it never retries a request that cannot succeed.

The SDK retries 408, 409, 429 and 5xx answers (and any answer whose ``x-should-retry``
header says so). A 4xx other than 408 (timeout) and 429 (rate limit) means the request
itself is refused (a missing or rejected key, an unknown model, a bad body): sending it
again only makes the person wait. Imported on first use, with the SDK.
"""

from __future__ import annotations

from typing import Any

from openai import AsyncOpenAI

RETRYABLE_4XX = frozenset({408, 429})
"""The client errors worth another attempt: the request timed out, or was rate limited."""


def retryable(status: int) -> bool | None:
    """``False`` for a status that cannot succeed on a retry, ``None`` to let the SDK decide."""
    if 400 <= status < 500 and status not in RETRYABLE_4XX:
        return False
    return None


class OracleAsyncOpenAI(AsyncOpenAI):
    """``AsyncOpenAI`` that does not retry 4xx answers other than 408 and 429."""

    def _should_retry(self, response: Any) -> bool:
        verdict = retryable(response.status_code)
        return bool(super()._should_retry(response)) if verdict is None else verdict
