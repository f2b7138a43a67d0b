"""The OpenTelemetry semantic conventions for generative AI, as the oracle's spans follow them.

Version 1.37 of the conventions (``gen_ai.provider.name``, ``gen_ai.input.messages``, ...):
the version and schema URL the tracer is made with, the request options that have a
``gen_ai.request.*`` attribute, a litellm model string as provider and model, and a chat
message in the conventions' ``role`` and ``parts`` form.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

SEMCONV_VERSION = "1.37.0"
"""The version of the OpenTelemetry semantic conventions the spans follow."""

SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
"""The schema URL the oracle's tracer is made with."""

REQUEST_PARAMETERS: Mapping[str, str] = MappingProxyType(
    {
        "temperature": "gen_ai.request.temperature",
        "top_p": "gen_ai.request.top_p",
        "top_k": "gen_ai.request.top_k",
        "max_tokens": "gen_ai.request.max_tokens",
        "max_completion_tokens": "gen_ai.request.max_tokens",
        "frequency_penalty": "gen_ai.request.frequency_penalty",
        "presence_penalty": "gen_ai.request.presence_penalty",
        "seed": "gen_ai.request.seed",
        "stop": "gen_ai.request.stop_sequences",
    }
)
"""Model options that have a ``gen_ai.request.*`` attribute, and that attribute."""


def model_parts(model: str | None) -> tuple[str, str]:
    """The ``gen_ai.provider.name`` and ``gen_ai.request.model`` of a litellm model string
    (``openai/gpt-4o``: ``openai`` and ``gpt-4o``; a name without a provider: ``unknown``)."""
    if not model:
        return "unknown", "unknown"
    head, slash, rest = model.partition("/")
    return (head, rest) if slash and rest else ("unknown", model)


def semconv_message(message: Any) -> dict[str, Any]:
    """An OpenAI-shaped chat message in the GenAI conventions' form (``role`` and ``parts``)."""
    role = str(message.get("role", "user"))
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    if role == "tool":
        response = {"type": "tool_call_response", "id": message.get("tool_call_id")}
        parts.append({**response, "response": content})
    elif isinstance(content, str) and content:
        parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        for piece in content:
            if isinstance(piece, dict) and piece.get("type") == "text":
                parts.append({"type": "text", "content": piece.get("text", "")})
            else:
                parts.append(
                    {
                        "type": str(piece.get("type", "other"))
                        if isinstance(piece, dict)
                        else "other"
                    }
                )
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return {"role": role, "parts": parts}
