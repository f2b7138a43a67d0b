"""Retrying a model call: which failures may pass if made again, and the one retry loop.

Both client paths (:class:`~oracle_core.models.openai.OpenAIModel` and
:class:`~oracle_core.models.litellm.LiteLLMModel`) make one attempt per request (the openai
SDK's and litellm's own retries are off) and retry here, so the policy is one piece of code:
the same failures retried, the same backoff, and the tokens of an abandoned attempt counted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection
from typing import TypeVar

from oracle_core.errors import ConfigError, ModelError
from oracle_core.models.unreachable import unreachable_kind
from oracle_core.settings.model_tables import RETRY_ON as RETRY_ON  # one list, read by both
from oracle_core.values.messages import Usage

T = TypeVar("T")


RETRY_DELAY = 0.5
"""Seconds before the first retry; each next one waits twice as long, at most :data:`MAX_DELAY`."""

MAX_DELAY = 8.0
"""The longest wait between two attempts, in seconds (as the openai SDK waits)."""


def retry_on_set(value: Collection[str] | str | None) -> frozenset[str]:
    """``value`` checked against :data:`RETRY_ON` (``None``: all of them).

    A string is read as a comma-separated list (``"timeout,429"``); an empty one retries nothing.

    Raises:
        ConfigError: a name outside :data:`RETRY_ON`, naming it and the choices.
    """
    if value is None:
        return RETRY_ON
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else list(value)
    chosen = frozenset(str(n).strip() for n in names if str(n).strip())
    wrong = sorted(chosen - RETRY_ON)
    if wrong:
        choices = ", ".join(sorted(RETRY_ON))
        raise ConfigError(
            f"retry_on: {', '.join(map(repr, wrong))} is not a failure that can be retried; "
            f"choose from {choices}",
            source="model settings",
            key="retry_on",
            expected=f"names from {choices}",
        )
    return chosen


def failure_kind(error: BaseException) -> str | None:
    """The :data:`RETRY_ON` name of ``error`` (``None``: a failure no retry can help)."""
    kind = unreachable_kind(error)  # litellm gives a lost connection the status 500: it is one
    if kind is not None:
        return kind
    status = getattr(error, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        if status >= 500:
            return "5xx"
        return str(status) if str(status) in RETRY_ON else None
    return None


def may_pass(error: BaseException, retry_on: Collection[str] = RETRY_ON) -> bool:
    """Whether a failed model call may pass if made again, under ``retry_on``."""
    kind = failure_kind(error)
    return kind is not None and kind in retry_on


def was_worked_on(error: BaseException) -> bool:
    """Whether the server may have read the prompt of an attempt that failed with ``error``:
    it timed out, or the server failed (5xx) after taking the request. Such an attempt
    counts its prompt's tokens."""
    return failure_kind(error) in {"timeout", "5xx"}


_SPENT = "_oracle_spent"  # where a failed call's error keeps its attempts' usage


def spent_on(error: BaseException) -> Usage:
    """What the attempts of a model call that failed with ``error`` used: the estimated
    prompt tokens of those the server may have worked on (zero for any other error)."""
    usage = getattr(error, _SPENT, None)
    return usage if isinstance(usage, Usage) else Usage()


def _spent(error: ModelError, usage: Usage) -> ModelError:
    # An attribute, not a subclass: a caller's ``type(error).__name__`` stays ``ModelError``.
    setattr(error, _SPENT, usage)
    return error


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    num_retries: int,
    retry_on: Collection[str],
    failed: Callable[[BaseException], ModelError],
    prompt: Callable[[], Usage],
    delay: float = RETRY_DELAY,
) -> tuple[T, Usage]:
    """Make ``attempt`` until it answers, retrying what :func:`may_pass` under ``retry_on``.

    Args:
        attempt: one request.
        num_retries: attempts after the first, at most.
        retry_on: the :data:`RETRY_ON` names retried.
        failed: the :class:`ModelError` a final failure becomes (a ``ModelError`` raised by
            ``attempt`` itself, such as a missing key, is final as it is).
        prompt: the estimated usage of one attempt's prompt (asked once, when needed).
        delay: seconds before the first retry; doubled each time, at most :data:`MAX_DELAY`.

    Returns:
        The answer and the usage of the attempts abandoned before it (estimated).

    Raises:
        ModelError: the last attempt failed, or its failure may not pass; :func:`spent_on`
            reads the usage of the attempts it abandoned.
    """
    spent = Usage()
    for number in range(num_retries + 1):
        try:
            return await attempt(), spent
        except ModelError:
            raise  # the oracle's own refusal (a missing key): nothing was sent
        except Exception as error:
            if was_worked_on(error):
                spent = spent + prompt()
            if number == num_retries or not may_pass(error, retry_on):
                raise _spent(failed(error), spent) from error
        await asyncio.sleep(min(delay * 2**number, MAX_DELAY))
    raise AssertionError("unreachable: the last attempt returns or raises")
