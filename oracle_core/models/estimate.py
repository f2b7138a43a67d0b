"""Token use the provider did not report, counted here and marked as an estimate.

A server that sends no usage (many local servers when streaming; every attempt abandoned by a
timeout or a server error) would otherwise count as zero tokens, and the usage limits,
budgets and metrics would not see it. The count is the oracle's own (``o200k_base``, the
same counter the prompt report uses), so it is close for OpenAI's models and a fair guess
for others; ``Usage.estimated`` says it is one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oracle_core.values.messages import ModelRequest, Usage
from oracle_core.values.tokens import count_json_tokens, count_message_tokens, count_tokens


def prompt_usage(request: ModelRequest) -> Usage:
    """The estimated prompt of ``request``: its messages (system prompt included) and tools."""
    tokens = sum(count_message_tokens(m) for m in request.openai_messages())
    if request.tools:
        tokens += count_json_tokens(request.openai_tools())
    return Usage(tokens, 0, estimated=True)


def reply_tokens(message: Mapping[str, Any]) -> int:
    """The estimated completion tokens of an assistant ``message``: its text, and each
    call's name and arguments."""
    tokens = count_tokens(str(message.get("content") or ""))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        tokens += count_tokens(str(function.get("name") or ""))
        tokens += count_tokens(str(function.get("arguments") or ""))
    return tokens


def estimated_usage(request: ModelRequest, message: Mapping[str, Any]) -> Usage:
    """The estimated usage of a call that answered ``request`` with ``message``."""
    return Usage(prompt_usage(request).prompt_tokens, reply_tokens(message), estimated=True)
