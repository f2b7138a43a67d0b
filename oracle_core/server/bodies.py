"""What clients send: the JSON request bodies of the HTTP API, as pydantic models.

FastAPI validates incoming JSON against them and they make the request schemas of the
OpenAPI docs; what the API answers with is in :mod:`oracle_core.server.models`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from oracle_core.values.ids import MAX_USER_ID


class RunRequest(BaseModel):
    """``POST /threads/{thread_id}/runs``: a user message to work to an answer."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1, description="The user's message.")
    user_id: str = Field(
        "default", min_length=1, max_length=MAX_USER_ID, description="Who the run acts for."
    )
    stream: bool = Field(
        False, description="Answer with server-sent events (as does `Accept: text/event-stream`)."
    )
    output_schema: dict[str, Any] | None = Field(
        None,
        description="A JSON Schema the final answer must fit: the model is asked for that JSON, "
        "a wrong answer gets one repair turn, and the run's `output` is the parsed JSON "
        "(docs/structured-output.md). A schema that is not valid JSON Schema is a 400.",
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
        max_length=MAX_USER_ID,
        description="Whose credential (ignored for a shared connection).",
    )


class ChatMessage(BaseModel):
    """One OpenAI chat message: text, an assistant's tool calls, or a tool's result."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class StreamOptions(BaseModel):
    """OpenAI ``stream_options``."""

    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """OpenAI ``POST /v1/chat/completions``: every field is used, forwarded to the model, or
    refused with a 400 (see :mod:`oracle_core.server.openai_request`)."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(description="Any name; it is echoed back (the oracle has one model).")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = Field(
        None,
        description=f"Who the run acts for (the run's user id): 1 to {MAX_USER_ID} characters, "
        "not only spaces, none a control character or a lone surrogate (else a 422).",
    )
    thread_id: str | None = Field(
        None,
        description="Oracle extension: continue this thread (post only the last user message); "
        "the X-Oracle-Thread header does the same.",
    )
    tools: list[dict[str, Any]] | None = Field(
        None, description="The client's own tools: offered to the model, handed back when called."
    )
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    n: int | None = None
