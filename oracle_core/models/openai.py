"""The direct model path: OpenAI-compatible endpoints over plain HTTP, without litellm.

For an ``openai/...`` model string litellm builds an OpenAI chat completions body and hands
it to the openai SDK, which posts it. Per call, litellm's own work around that (parameter
mapping, logging, cost calculation) costs several times the CPU of the call itself, and
importing it costs seconds; importing the openai SDK alone costs more than the rest of an
``oracle ask``. :class:`OpenAIModel` builds the same body and posts it itself, with httpx
(:mod:`oracle_core.models.openai_http`, which reads answers and errors as the SDK does): the
same JSON reaches the server, the same errors are retried the same number of times (by the
one retry loop both paths share, :mod:`oracle_core.models.retries`), and failures become the
same :class:`ModelError` messages (``tests/models/test_model_path.py`` compares both paths against
one fake server).

It takes only what litellm passes through unchanged. A request litellm would reshape is
sent through litellm instead, by a :class:`~oracle_core.models.litellm.LiteLLMModel` made
with the same settings (see :func:`sends_directly`):

- OpenAI's reasoning models (``o1``, ``o3``, ``o4``..., ``gpt-5``...), whose parameters and
  system message litellm rewrites;
- an option outside :data:`PASS_THROUGH` (``response_format``, ``user``, ``api_base``,
  litellm's own keywords, ...), which litellm may rename, drop or check per model;
- a message whose content is not plain text (images, files), which litellm may transform.

Intentionally different from the litellm path:

- a connection that fails (refused, reset, timed out) has no HTTP status, so the error
  names none; litellm reports it as HTTP 500;
- the error's text is the provider's own message, without litellm's prefix
  (``litellm.RateLimitError: OpenAIException - ...``) and suffix (``LiteLLM Retried: 2 times``).

Alike on both paths besides the body: a server that reports no usage gets the oracle's own
estimate, marked ``Usage.estimated`` (:mod:`oracle_core.models.estimate`); a tool-call-only
assistant message is sent with its server's ``content`` (``""``: see
:mod:`oracle_core.models.profiles`);
``max_tokens`` is :data:`DEFAULT_MAX_TOKENS` unless set.

Neither litellm nor the openai SDK is imported on this path. ``ORACLE_MODEL_CLIENT=litellm``
makes :func:`model_for` choose litellm for every model string.
"""

from __future__ import annotations

import asyncio
import os
import re
import weakref
from collections.abc import AsyncIterator, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from oracle_core.errors import ModelError
from oracle_core.models.base import Model
from oracle_core.models.completions import (
    DEFAULT_MAX_TOKENS,
    CallSettings,
    ProviderModel,
    call_failed,
    missing_key,
    relay_stream,
    with_spent,
)
from oracle_core.models.retries import RETRY_ON
from oracle_core.models.unreachable import ORACLE_API_BASE, ModelServer
from oracle_core.models.wire import response_from, wire_messages
from oracle_core.settings.reading import env_choice
from oracle_core.values.messages import ModelRequest, ModelResponse, Usage

if TYPE_CHECKING:
    from oracle_core.models.litellm import LiteLLMModel
    from oracle_core.models.openai_http import ChatCompletions

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEMO_MODEL",
    "MODEL_CLIENT",
    "MODEL_CLIENTS",
    "PASS_THROUGH",
    "PREFIX",
    "RETRY_ON",
    "OpenAIModel",
    "model_for",
    "sends_directly",
]

PREFIX = "openai/"
"""The litellm provider prefix of OpenAI and OpenAI-compatible endpoints."""

MODEL_CLIENT = "ORACLE_MODEL_CLIENT"
"""The operator switch: ``auto`` (default) or ``litellm`` (every model through litellm)."""

MODEL_CLIENTS = ("auto", "litellm")
"""The values :data:`MODEL_CLIENT` may take."""

PASS_THROUGH = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "n",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "tool_choice",
        "parallel_tool_calls",
        "service_tier",
        "store",
        "prompt_cache_key",
        "safety_identifier",
        "extra_headers",
        "extra_body",
    }
)
"""Options litellm sends to an OpenAI-compatible endpoint exactly as given, for any model name
that :func:`sends_directly` accepts (``None`` values are left out, as litellm does)."""

# OpenAI's reasoning models: litellm checks and rewrites their parameters (temperature,
# max_tokens) and, for some, turns the system message into a user message.
_REASONING = re.compile(r"^(o\d|gpt-5|codex)", re.IGNORECASE)


def sends_directly(model: str, options: Mapping[str, Any] = {}) -> bool:
    """Whether a call to ``model`` with ``options`` sends what litellm would, unchanged.

    True for an ``openai/...`` string that is not one of OpenAI's reasoning models, with
    every option (that is not ``None``) in :data:`PASS_THROUGH`.
    """
    if not model.startswith(PREFIX) or _REASONING.match(model[len(PREFIX) :]):
        return False
    return all(key in PASS_THROUGH for key, value in options.items() if value is not None)


def _plain(messages: Iterable[Mapping[str, Any]]) -> bool:
    return all(isinstance(m.get("content"), str | None) for m in messages)


def _without_none(message: Mapping[str, Any]) -> dict[str, Any]:
    # litellm leaves out a message's keys whose value is None ("content": None of an
    # assistant message that only calls tools), not nested ones.
    return {key: value for key, value in message.items() if value is not None}


DEMO_MODEL = "demo"
"""The model string of the offline scripted stand-in (:class:`~oracle_core.models.demo.DemoModel`)."""


def model_for(
    name: str,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    num_retries: int | None = None,
    retry_on: Collection[str] | None = None,
    **options: Any,
) -> Model:
    """The model for the model string ``name``: :class:`OpenAIModel` or ``LiteLLMModel``.

    ``openai/...`` strings that :func:`sends_directly` accepts (with ``options``) get the
    direct path, every other string litellm, and so does every string when ``env`` (default
    ``os.environ``) sets ``ORACLE_MODEL_CLIENT=litellm``. ``demo`` is the offline stand-in
    (it takes no settings).

    Args:
        name: the model string.
        api_base: the server's base URL.
        api_key: the key.
        env: the environment read for ``ORACLE_MODEL_CLIENT``.
        timeout: seconds one attempt may take (``None``: the model's default, 120).
        num_retries: retries after a failure that may pass (``None``: the default, 2).
        retry_on: which failures are retried, names from :data:`RETRY_ON` (``None``: all).
        options: request options sent with every call (``max_tokens``, ``temperature``...;
            without ``max_tokens``, :data:`DEFAULT_MAX_TOKENS` is sent).

    Raises:
        ConfigError: ``ORACLE_MODEL_CLIENT`` is neither ``auto`` nor ``litellm``, or
            ``retry_on`` names a failure outside :data:`RETRY_ON`.
    """
    if name == DEMO_MODEL:
        from oracle_core.models.demo import DemoModel

        return DemoModel()
    settings: dict[str, Any] = {
        key: value
        for key, value in (("timeout", timeout), ("num_retries", num_retries))
        if value is not None
    }
    client = env_choice(os.environ if env is None else env, MODEL_CLIENT, MODEL_CLIENTS, "auto")
    if client == "auto" and sends_directly(name, options):
        return OpenAIModel(
            name, api_base=api_base, api_key=api_key, retry_on=retry_on, **settings, **options
        )
    from oracle_core.models.litellm import LiteLLMModel

    return LiteLLMModel(
        name, api_base=api_base, api_key=api_key, retry_on=retry_on, **settings, **options
    )


class OpenAIModel(ProviderModel):
    """Calls an OpenAI-compatible chat completions endpoint directly (over httpx).

    Takes the same arguments as :class:`~oracle_core.models.litellm.LiteLLMModel` and sends
    the same request (see the module docs for the few things it leaves to litellm).

    Args:
        model: an ``openai/...`` model string; the part after ``openai/`` is sent.
        api_base: the server's base URL; default ``OPENAI_BASE_URL``, ``OPENAI_API_BASE``,
            else OpenAI's.
        api_key: the key; default ``OPENAI_API_KEY``. Without either, a call fails at once
            with a :class:`ModelError` saying what to set (nothing is sent).
        num_retries: retries for the failures in ``retry_on`` (by default timeouts, lost
            connections, 408, 409, 429, 5xx), with exponential backoff; any other failure is
            final at once (:mod:`oracle_core.models.retries`).
        timeout: seconds one attempt may take.
        retry_on: which failures are retried (:data:`RETRY_ON`).
        options: more request options (``temperature``, ...).
    """

    def _prepare(self) -> None:
        # One client per event loop: its connection pool belongs to the loop it was made in.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ChatCompletions] = (
            weakref.WeakKeyDictionary()
        )
        self._litellm: LiteLLMModel | None = None

    def _client(self) -> ChatCompletions:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            from oracle_core.models.openai_http import ChatCompletions

            key = self.api_key or os.environ.get("OPENAI_API_KEY")
            if not key:
                raise ModelError(missing_key(self.name, ["OPENAI_API_KEY"]))
            base = (
                self.api_base
                or os.environ.get("OPENAI_BASE_URL")
                or os.environ.get("OPENAI_API_BASE")
            )
            client = ChatCompletions(api_key=key, base_url=base or None, timeout=self.timeout)
            self._clients[loop] = client
        return client

    def endpoint(self) -> ModelServer:
        """Where this model's calls go: ``api_base`` (``ORACLE_API_BASE``), else
        ``OPENAI_BASE_URL`` or ``OPENAI_API_BASE``, else OpenAI's own API."""
        if self.api_base:
            return ModelServer(self.api_base, ORACLE_API_BASE)
        for variable in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
            if os.environ.get(variable):
                return ModelServer(os.environ[variable], variable)
        from oracle_core.models.openai_http import OPENAI_BASE_URL

        return ModelServer(OPENAI_BASE_URL, "OpenAI's own API (ORACLE_API_BASE is not set)")

    def litellm(self) -> LiteLLMModel:
        """The ``LiteLLMModel`` with this model's settings, for requests litellm reshapes."""
        if self._litellm is None:
            from oracle_core.models.litellm import LiteLLMModel

            self._litellm = LiteLLMModel(
                self.name,
                api_base=self.api_base,
                api_key=self.api_key,
                num_retries=self.num_retries,
                timeout=self.timeout,
                retry_on=self.retry_on,
                **self.options,
            )
        return self._litellm

    def body(self, request: ModelRequest) -> dict[str, Any] | None:
        """The JSON body of the call for ``request``, as litellm would send it.

        ``None`` when litellm would reshape the request (see :func:`sends_directly`).
        """
        return self._body(request, self.settings(request))

    def _body(self, request: ModelRequest, settings: CallSettings) -> dict[str, Any] | None:
        model = request.model or self.name
        options = settings.options
        messages = [_without_none(m) for m in wire_messages(request, self.profile)]
        if not sends_directly(model, options) or not _plain(messages):
            return None
        body: dict[str, Any] = {"model": model[len(PREFIX) :], "messages": messages}
        body.update((key, value) for key, value in options.items() if value is not None)
        if request.tools:
            body["tools"] = request.openai_tools()
        return body

    async def _create(
        self, request: ModelRequest, settings: CallSettings, body: dict[str, Any]
    ) -> tuple[Any, Usage]:
        model = PREFIX + body["model"]
        body = dict(body)
        extra_body, extra_headers = body.pop("extra_body", None), body.pop("extra_headers", None)
        body.update(extra_body or {})  # as the openai SDK merges them
        headers = dict(extra_headers or {})
        client = self._client()
        send = client.stream if body.get("stream") else client.create
        return await self._retried(
            request,
            settings,
            lambda: send(body, headers=headers, time_limit=settings.timeout),
            lambda error: _failed(model, error),
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        settings = self.settings(request)
        body = self._body(request, settings)
        if body is None:
            return await self.litellm().complete(request)
        completion, spent = await self._create(request, settings, body)
        return with_spent(response_from(completion, request, self.profile), spent)

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        settings = self.settings(request)
        body = self._body(request, settings)
        if body is None:
            async for piece in self.litellm().stream(request):
                yield piece
            return
        body.update(stream=True, stream_options={"include_usage": True})
        stream, spent = await self._create(request, settings, body)
        relayed = relay_stream(
            self.name, stream, stream.close, request, spent, profile=self.profile
        )
        async for piece in relayed:
            yield piece

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop, if one was made."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()


def _failed(model: str, error: BaseException) -> ModelError:
    """The :class:`ModelError` of a failed call: the server's own message, when it sent one."""
    from oracle_core.models.openai_http import APIStatusError

    if isinstance(error, APIStatusError):
        detail = error.body.get("message") if isinstance(error.body, dict) else None
        return call_failed(model, error, detail or error.message)
    return call_failed(model, error)
