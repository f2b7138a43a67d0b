"""The litellm model: any provider litellm knows, by changing one string.

litellm is imported on first use only (:func:`import_litellm`), so commands that never call
a model never pay for its import.
"""

from __future__ import annotations

import os
import sys
from asyncio import to_thread
from collections.abc import AsyncIterator
from typing import Any

from oracle_core.environment import import_litellm
from oracle_core.errors import ModelError
from oracle_core.models.completions import (
    CallSettings,
    ProviderModel,
    call_failed,
    missing_key,
    relay_stream,
    with_spent,
)
from oracle_core.models.unreachable import ORACLE_API_BASE, ModelServer, provider_server
from oracle_core.models.wire import response_from, wire_messages
from oracle_core.values.messages import ModelRequest, ModelResponse, Usage


class LiteLLMModel(ProviderModel):
    """Calls ``litellm.acompletion``: any model string litellm knows works.

    Args:
        model: the litellm model string (``"openai/gpt-4o-mini"``, ``"anthropic/claude-..."``).
        api_base: the provider's base URL (for self-hosted or OpenAI-compatible servers).
        api_key: the key; by default litellm reads the provider's usual env variable. When
            neither is set, a call fails at once with a :class:`ModelError` naming the
            variables to set (litellm would report it as an HTTP 500, after retries).
        num_retries: retries for the failures in ``retry_on``; any other error fails at
            once. The oracle retries itself (:mod:`oracle_core.models.retries`, shared with
            the direct path): litellm's own ``num_retries`` retries every error once
            ``tenacity`` is installed (a 400 included), so it is never handed to litellm.
        timeout: seconds one attempt may take.
        retry_on: which failures are retried (:data:`~oracle_core.models.retries.RETRY_ON`).
        options: more keyword arguments for ``acompletion`` (``temperature``, ...).
    """

    def _prepare(self) -> None:
        self._keys_checked: set[str] = set()  # model strings whose key was found

    def endpoint(self) -> ModelServer:
        """Where this model's calls go: ``api_base`` (``ORACLE_API_BASE``), else the
        provider's own variable (``OLLAMA_API_BASE``), else litellm's default for it."""
        if self.api_base:
            return ModelServer(self.api_base, ORACLE_API_BASE)
        try:
            _, provider, _, default = import_litellm().get_llm_provider(self.name)
        except Exception:  # a model string litellm cannot place: it named no server either
            return super().endpoint()
        return provider_server(str(provider), default, os.environ)

    def _arguments(self, request: ModelRequest, settings: CallSettings) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": request.model or self.name,
            "messages": wire_messages(request, self.profile),
            "num_retries": 0,  # retried here, only what may pass (see _acompletion)
            "max_retries": 0,  # nor by the SDK under litellm: one attempt a call
            "timeout": settings.timeout,
            **settings.options,
        }
        if request.tools:
            arguments["tools"] = request.openai_tools()
        if self.api_base:
            arguments["api_base"] = self.api_base
        if self.api_key:
            arguments["api_key"] = self.api_key
        return arguments

    def _check_key(self, litellm: Any, model: str) -> None:
        """Fail now when ``model`` needs an API key that is set nowhere."""
        if self.api_key or model in self._keys_checked:
            return
        found = litellm.validate_environment(model=model, api_base=self.api_base)
        # Only keys: a provider's base URL variable (OLLAMA_API_BASE, ...) has a default.
        missing = [v for v in found.get("missing_keys") or [] if v.endswith(("_KEY", "_TOKEN"))]
        if missing:
            raise ModelError(missing_key(model, missing))
        self._keys_checked.add(model)

    async def _acompletion(
        self, request: ModelRequest, settings: CallSettings, **extra: Any
    ) -> tuple[Any, Usage]:
        arguments = {**self._arguments(request, settings), **extra}
        model = arguments["model"]
        # Imported in a worker thread the first time (seconds): structured output's first
        # run comes here, and the loop must keep serving meanwhile (issue 38).
        litellm = import_litellm() if "litellm" in sys.modules else await to_thread(import_litellm)
        self._check_key(litellm, model)
        return await self._retried(
            request,
            settings,
            lambda: litellm.acompletion(**arguments),
            lambda error: call_failed(model, error),
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        completion, spent = await self._acompletion(request, self.settings(request))
        return with_spent(response_from(completion, request, self.profile), spent)

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        extra = {"stream": True, "stream_options": {"include_usage": True}}
        stream, spent = await self._acompletion(request, self.settings(request), **extra)
        relayed = relay_stream(
            self.name,
            stream,
            request=request,
            spent=spent,
            server_usage=lambda: _sent(stream),
            profile=self.profile,
        )
        async for piece in relayed:
            yield piece


def _sent(stream: Any) -> bool:
    """Whether the server sent usage in ``stream``: litellm ends every stream asked for usage
    with a usage chunk, counting it itself when the server sent none, and says so nowhere but
    in the chunks it kept (``CustomStreamWrapper.chunks``). Unknown (another shape): trusted."""
    kept = getattr(stream, "chunks", None)
    if not isinstance(kept, list):
        return True
    return any(getattr(chunk, "usage", None) for chunk in kept)
