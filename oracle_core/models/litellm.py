"""The litellm model: any provider litellm knows, by changing one string.

litellm is imported on first use only (:func:`import_litellm`), so commands that never call
a model never pay for its import.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from oracle_core.environment import import_litellm
from oracle_core.models.completions import (
    ProviderModel,
    call_failed,
    relay_stream,
    response_from,
)
from oracle_core.run.messages import ModelRequest, ModelResponse


class LiteLLMModel(ProviderModel):
    """Calls ``litellm.acompletion``: any model string litellm knows works.

    Args:
        model: the litellm model string (``"openai/gpt-4o-mini"``, ``"anthropic/claude-..."``).
        api_base: the provider's base URL (for self-hosted or OpenAI-compatible servers).
        api_key: the key; by default litellm reads the provider's usual env variable.
        num_retries: retries litellm makes for errors it deems retryable (429, 5xx, timeouts).
        timeout: seconds one attempt may take.
        options: more keyword arguments for ``acompletion`` (``temperature``, ...).
    """

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": request.model or self.name,
            "messages": request.openai_messages(),
            "num_retries": self.num_retries,
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

    async def _acompletion(self, **arguments: Any) -> Any:
        litellm = import_litellm()
        try:
            return await litellm.acompletion(**arguments)
        except Exception as error:
            raise call_failed(arguments["model"], error) from error

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return response_from(await self._acompletion(**self._arguments(request)))

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        arguments = self._arguments(request)
        arguments.update(stream=True, stream_options={"include_usage": True})
        stream = await self._acompletion(**arguments)
        async for piece in relay_stream(self.name, stream):
            yield piece
