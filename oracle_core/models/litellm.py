"""The litellm model: any provider litellm knows, by changing one string.

litellm is imported on first use only (:func:`import_litellm`), so commands that never call
a model never pay for its import.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from oracle_core.environment import import_litellm
from oracle_core.models.base import Model, ModelError, assistant_message
from oracle_core.run.messages import ModelRequest, ModelResponse, Usage


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    get = raw.get if isinstance(raw, dict) else lambda k, d=0: getattr(raw, k, d)
    return Usage(int(get("prompt_tokens", 0) or 0), int(get("completion_tokens", 0) or 0))


class LiteLLMModel(Model):
    """Calls ``litellm.acompletion``: any model string litellm knows works.

    Args:
        model: the litellm model string (``"openai/gpt-4o-mini"``, ``"anthropic/claude-..."``).
        api_base: the provider's base URL (for self-hosted or OpenAI-compatible servers).
        api_key: the key; by default litellm reads the provider's usual env variable.
        num_retries: retries litellm makes for errors it deems retryable (429, 5xx, timeouts).
        timeout: seconds one attempt may take.
        options: more keyword arguments for ``acompletion`` (``temperature``, ...).
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        num_retries: int = 2,
        timeout: float = 120.0,
        **options: Any,
    ) -> None:
        self.name = model
        self.api_base = api_base
        self.api_key = api_key
        self.num_retries = num_retries
        self.timeout = timeout
        self.options = options

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
            status = getattr(error, "status_code", None)
            where = f" (HTTP {status})" if status else ""
            raise ModelError(
                f"model call to {arguments['model']!r} failed{where}: {type(error).__name__}: {error}"
            ) from error

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self._acompletion(**self._arguments(request))
        message = response.choices[0].message
        tool_calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.function.name,
                    "arguments": call.function.arguments or "",
                },
            }
            for call in (message.tool_calls or [])
        ]
        return ModelResponse(
            assistant_message(message.content, tool_calls), _usage(getattr(response, "usage", None))
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        arguments = self._arguments(request)
        arguments.update(stream=True, stream_options={"include_usage": True})
        stream = await self._acompletion(**arguments)
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage = Usage()
        try:
            async for chunk in stream:
                if getattr(chunk, "usage", None):
                    usage = _usage(chunk.usage)
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if getattr(delta, "content", None):
                    text.append(delta.content)
                    yield delta.content
                for piece in getattr(delta, "tool_calls", None) or []:
                    call = calls.setdefault(
                        piece.index or 0,
                        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                    )
                    call["id"] = piece.id or call["id"]
                    if piece.function is not None:
                        call["function"]["name"] += piece.function.name or ""
                        call["function"]["arguments"] += piece.function.arguments or ""
        except ModelError:
            raise
        except Exception as error:
            raise ModelError(
                f"model stream from {self.name!r} failed: {type(error).__name__}: {error}"
            ) from error
        tool_calls = [calls[i] for i in sorted(calls)]
        yield ModelResponse(assistant_message("".join(text) or None, tool_calls), usage)
