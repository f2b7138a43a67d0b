"""What every model reached over the network shares: its settings, its errors, its stream.

:class:`ProviderModel` holds the settings both client paths take (timeout, retries, which
failures are retried, request options) and makes each call through the one retry loop
(:mod:`oracle_core.models.retries`); :func:`relay_stream` turns a provider's chunks into
text pieces and the whole :class:`ModelResponse` (read by :mod:`oracle_core.models.wire`,
whose names are re-exported here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from oracle_core.errors import ModelError
from oracle_core.models.base import Model
from oracle_core.models.estimate import prompt_usage
from oracle_core.models.profiles import OPENAI_COMPATIBLE, ServerProfile, profile_for
from oracle_core.models.retries import RETRY_DELAY, RETRY_ON, retry_on_set, with_retries
from oracle_core.models.unreachable import ORACLE_API_BASE, ModelServer, scrub, unreachable
from oracle_core.models.wire import (
    StreamAssembler,
    reported,
    response_from,
    usage_from,
    wire_messages,
)
from oracle_core.settings.model_tables import DEFAULTS
from oracle_core.values.messages import ModelRequest, ModelResponse, Usage

__all__ = [
    "CALL_SETTINGS",
    "DEFAULT_MAX_TOKENS",
    "KEY_HINT",
    "RETRY_ON",
    "CallSettings",
    "ProviderModel",
    "StreamAssembler",
    "call_failed",
    "limit_output",
    "missing_key",
    "relay_stream",
    "reported",
    "response_from",
    "stream_failed",
    "usage_from",
    "wire_messages",
    "with_spent",
]


def call_failed(model: str, error: BaseException, detail: object | None = None) -> ModelError:
    """The :class:`ModelError` for a call to ``model`` that raised ``error``.

    The message names the model, the HTTP status when there was one, the error's type, and
    ``detail`` (default: the error's own text): ``model call to 'openai/gpt-4o' failed
    (HTTP 429): RateLimitError: ...``.
    """
    status = getattr(error, "status_code", None)
    where = f" (HTTP {status})" if status else ""
    text = scrub(str(error if detail is None else detail))
    hint = f" ({KEY_HINT})" if status in (401, 403) else ""
    return ModelError(
        f"model call to {model!r} failed{where}: {type(error).__name__}: {text}{hint}"
    )


KEY_HINT = (
    "the model server refused the API key: set ORACLE_API_KEY (or pass --api-key) to a "
    "key it accepts"
)
"""What a 401 or 403 from the model server tells the operator to do."""


def missing_key(model: str, variables: Sequence[str]) -> str:
    """The message for a call to ``model`` that has no API key to send.

    Args:
        model: the model string.
        variables: the provider's own variables that would hold the key.
    """
    own = " or ".join(variables)
    return (
        f"no API key for model {model!r}: set ORACLE_API_KEY (or pass --api-key), or {own}; "
        "a local server that needs no key still wants one set (any value)"
    )


def stream_failed(model: str, error: BaseException) -> ModelError:
    """The :class:`ModelError` for a stream from ``model`` that broke after it started."""
    return ModelError(
        f"model stream from {model!r} failed: {type(error).__name__}: {scrub(str(error))}"
    )


CALL_SETTINGS = frozenset({"timeout", "num_retries", "retry_on"})
"""Request options that set how one call is made, not what is asked: never sent to the
server, they override the model's own :class:`ProviderModel` settings for that call."""

DEFAULT_MAX_TOKENS: int = DEFAULTS["max_tokens"]
"""The ``max_tokens`` sent when neither the model's options nor the request set one (nor
``max_completion_tokens``): a local model that does not stop would otherwise write until its
context is full. A reply cut there ends with ``finish_reason: "length"`` and the run says so
(``RunResult.truncated``). Set ``max_tokens`` to ``None`` in the options to send no limit."""


@dataclass(frozen=True)
class CallSettings:
    """How one call is made: the model's settings with the request's overrides.

    Attributes:
        timeout: seconds one attempt may take.
        num_retries: attempts after the first, at most.
        retry_on: the failures retried (names from :data:`~oracle_core.models.retries.RETRY_ON`).
        options: the request options to send (without :data:`CALL_SETTINGS`, with
            :data:`DEFAULT_MAX_TOKENS` unless a limit is set).
    """

    timeout: float
    num_retries: int
    retry_on: frozenset[str]
    options: dict[str, Any]


def limit_output(options: dict[str, Any]) -> None:
    """Add ``max_tokens``: :data:`DEFAULT_MAX_TOKENS` to a call's ``options`` unless they set
    ``max_tokens`` (even to ``None``: no limit) or ``max_completion_tokens``."""
    if "max_tokens" not in options and options.get("max_completion_tokens") is None:
        options["max_tokens"] = DEFAULT_MAX_TOKENS


class ProviderModel(Model):
    """A model reached over the network: the settings every provider client takes.

    Args:
        model: the model string.
        api_base: the server's base URL.
        api_key: the key.
        num_retries: retries for the failures in ``retry_on``; default 2.
        timeout: seconds one attempt may take; default 120.
        retry_on: which failures are retried, names from
            :data:`~oracle_core.models.retries.RETRY_ON` (default: all of them).
        options: more request options (``temperature``, ``max_tokens``, ...).

    A request's options ``timeout``, ``num_retries`` and ``retry_on`` override these for
    that call (:data:`CALL_SETTINGS`).

    Raises:
        ConfigError: ``retry_on`` names a failure outside ``RETRY_ON``.
    """

    retry_delay = RETRY_DELAY
    """Seconds before the first retry; each next one waits twice as long (at most 8 s)."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        num_retries: int = DEFAULTS["retries"],
        timeout: float = DEFAULTS["timeout"],
        retry_on: Collection[str] | None = None,
        **options: Any,
    ) -> None:
        self.name = model
        self.api_base = api_base
        self.api_key = api_key
        self.num_retries = num_retries
        self.timeout = timeout
        self.retry_on = retry_on_set(retry_on)
        self.options = options
        self.profile: ServerProfile = profile_for(model, api_base)
        """The kind of server it talks to (:mod:`oracle_core.models.profiles`)."""
        self._prepare()

    def _prepare(self) -> None:
        """Set up what a subclass keeps besides the settings (called by ``__init__``)."""

    def endpoint(self) -> ModelServer:
        """Where this model's calls go, named when the server does not answer: the
        operator's ``api_base`` (``ORACLE_API_BASE``), else the client's default."""
        if self.api_base:
            return ModelServer(self.api_base, ORACLE_API_BASE)
        return ModelServer(None, "the provider's default server")

    def settings(self, request: ModelRequest) -> CallSettings:
        """How to make the call for ``request`` (see :class:`CallSettings`).

        Raises:
            ConfigError: the request's ``retry_on`` names a failure outside ``RETRY_ON``.
        """
        merged = {**self.options, **request.options}
        timeout = merged.pop("timeout", None)
        num_retries = merged.pop("num_retries", None)
        retry_on = merged.pop("retry_on", None)
        limit_output(merged)
        return CallSettings(
            self.timeout if timeout is None else float(timeout),
            self.num_retries if num_retries is None else int(num_retries),
            self.retry_on if retry_on is None else retry_on_set(retry_on),
            merged,
        )

    async def _retried(
        self,
        request: ModelRequest,
        settings: CallSettings,
        attempt: Callable[[], Awaitable[Any]],
        failed: Callable[[BaseException], ModelError],
    ) -> tuple[Any, Usage]:
        """``attempt`` made under ``settings`` (:func:`~oracle_core.models.retries.with_retries`).

        A server that did not answer (refused, dropped, timed out) fails with a
        :class:`~oracle_core.models.unreachable.ModelUnreachableError` naming its URL and the
        setting behind it; any other failure with what ``failed`` makes of it.
        """
        estimate: list[Usage] = []

        def prompt() -> Usage:
            if not estimate:
                estimate.append(prompt_usage(request))
            return estimate[0]

        return await with_retries(
            attempt,
            num_retries=settings.num_retries,
            retry_on=settings.retry_on,
            failed=lambda error: self._unreachable(request, error, settings) or failed(error),
            prompt=prompt,
            delay=self.retry_delay,
        )

    def _unreachable(
        self, request: ModelRequest, error: BaseException, settings: CallSettings
    ) -> ModelError | None:
        return unreachable(request.model or self.name, error, self.endpoint(), settings.timeout)


def with_spent(response: ModelResponse, spent: Usage) -> ModelResponse:
    """``response`` with the usage of the attempts abandoned before it added."""
    if not spent.total_tokens:
        return response
    return dataclasses.replace(response, usage=response.usage + spent)


async def relay_stream(
    model: str,
    chunks: AsyncIterator[Any],
    close: Callable[[], Awaitable[None]] | None = None,
    request: ModelRequest | None = None,
    spent: Usage | None = None,
    server_usage: Callable[[], bool] | None = None,
    profile: ServerProfile = OPENAI_COMPATIBLE,
) -> AsyncIterator[str | ModelResponse]:
    """The text pieces of a provider's stream of chunks, then the whole :class:`ModelResponse`.

    A stream that breaks after a tool call began ends there: the calls not whole by then are
    cut off (``ModelResponse.cut_off``) and the run goes on. Any other failure while reading
    becomes a :class:`~oracle_core.ModelError` naming ``model``; ``close`` (when given) runs
    however the stream ends. ``request`` is what the usage is estimated from when the
    server reports none; ``spent``, the usage of attempts abandoned before this one;
    ``server_usage``, asked at the end, says whether the usage in the chunks was the server's
    (``False``: a client library's own count, so it is estimated here and marked);
    ``profile``, the kind of server streaming.
    """
    answer = StreamAssembler(request, profile)
    try:
        async for chunk in chunks:
            text = answer.add(chunk)
            if text:
                yield text
    except ModelError:
        raise
    except Exception as error:
        if not answer.calling:
            raise stream_failed(model, error) from error
        answer.cut()
    finally:
        if close is not None:
            await close()
    if server_usage is not None and not server_usage():
        answer.drop_usage()
    yield with_spent(answer.response(), spent or Usage())
