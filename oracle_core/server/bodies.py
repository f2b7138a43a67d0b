"""What clients send: the JSON request bodies of the HTTP API, as pydantic models.

FastAPI validates incoming JSON against them and they make the request schemas of the
OpenAPI docs; what the API answers with is in :mod:`oracle_core.server.models`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class RunRequest(BaseModel):
    """``POST /threads/{thread_id}/runs``: a user message to work to an answer."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1, description="The user's message.")
    user_id: str = Field(
        "default", min_length=1, max_length=200, description="Who the run acts for."
    )
    stream: bool = Field(
        False, description="Answer with server-sent events (as does `Accept: text/event-stream`)."
    )


class DecisionBody(BaseModel):
    """``POST /operations/{id}/decision``: approve or deny, with an optional reason.

    Strict: ``"yes"``, ``1`` or ``"true"`` are not a decision, only JSON ``true``/``false``.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    approve: bool = Field(description="true to approve the call, false to deny it.")
    reason: str | None = Field(
        None, max_length=2000, description="Why; a denial's reason is told to the model."
    )


class CredentialBody(BaseModel):
    """``PUT /connections/{plugin}/{name}``: the credential, and whose it is."""

    model_config = ConfigDict(extra="forbid")

    value: SecretStr = Field(description="The credential (API key, token); never echoed.")
    user_id: str = Field(
        "default",
        min_length=1,
        max_length=200,
        description="Whose credential (ignored for a shared connection).",
    )


class ChatMessage(BaseModel):
    """One OpenAI chat message (text only)."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class StreamOptions(BaseModel):
    """OpenAI ``stream_options``."""

    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """OpenAI ``POST /v1/chat/completions``; unknown sampling options are accepted and ignored."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(description="Any name; it is echoed back (the oracle has one model).")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = Field(None, description="Who the run acts for (the run's user id).")
    thread_id: str | None = Field(
        None,
        description="Oracle extension: continue this thread (post only the last user message); "
        "the X-Oracle-Thread header does the same.",
    )
    tools: list[dict[str, Any]] | None = None
    n: int | None = None
