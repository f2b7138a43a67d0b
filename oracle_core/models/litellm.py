"""The litellm model: any provider litellm knows, by changing one string.

litellm is imported on first use only (:func:`import_litellm`), so commands that never call
a model never pay for its import.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from oracle_core.environment import import_litellm
from oracle_core.errors import ModelError
from oracle_core.models.completions import (
    ProviderModel,
    call_failed,
    may_pass,
    missing_key,
    relay_stream,
    response_from,
)
from oracle_core.values.messages import ModelRequest, ModelResponse


class LiteLLMModel(ProviderModel):
    """Calls ``litellm.acompletion``: any model string litellm knows works.

    Args:
        model: the litellm model string (``"openai/gpt-4o-mini"``, ``"anthropic/claude-..."``).
        api_base: the provider's base URL (for self-hosted or OpenAI-compatible servers).
        api_key: the key; by default litellm reads the provider's usual env variable. When
            neither is set, a call fails at once with a :class:`ModelError` naming the
            variables to set (litellm would report it as an HTTP 500, after retries).
        num_retries: retries for errors that may pass (408, 429, 5xx, timeouts, lost
            connections); any other error fails at once. The oracle retries itself: litellm's
            own ``num_retries`` retries every error once ``tenacity`` is installed (a 400
            included), so it is never handed to litellm.
        timeout: seconds one attempt may take.
        options: more keyword arguments for ``acompletion`` (``temperature``, ...).
    """

    retry_delay = 0.5
    """Seconds before the first retry; each next one waits twice as long (at most 8 s)."""

    def _prepare(self) -> None:
        self._keys_checked: set[str] = set()  # model strings whose key was found

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": request.model or self.name,
            "messages": request.openai_messages(),
            "num_retries": 0,  # retried here, only what may pass (see _acompletion)
            "max_retries": 0,  # nor by the SDK under litellm: one attempt a call
            "timeout": self.timeout,
            **self.options,
            **request.options,
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

    async def _acompletion(self, **arguments: Any) -> Any:
        litellm = import_litellm()
        self._check_key(litellm, arguments["model"])
        for attempt in range(self.num_retries + 1):
            try:
                return await litellm.acompletion(**arguments)
            except Exception as error:
                if attempt == self.num_retries or not may_pass(error):
                    raise call_failed(arguments["model"], error) from error
            await asyncio.sleep(min(self.retry_delay * 2**attempt, 8.0))  # as the SDKs do
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return response_from(await self._acompletion(**self._arguments(request)))

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        arguments = self._arguments(request)
        arguments.update(stream=True, stream_options={"include_usage": True})
        stream = await self._acompletion(**arguments)
        async for piece in relay_stream(self.name, stream):
            yield piece
