"""An OpenAI-compatible ``POST /v1/chat/completions``, backed by an oracle thread.

Any OpenAI client talks to the oracle with its plugins: the oracle runs its own tools
(meta-tools included) inside one request and answers with the final text. Two ways in:

- Stateless, as OpenAI: no thread given. A new thread is made, seeded with the earlier
  ``user`` and ``assistant`` messages of the request, the last user message is run on it,
  and the thread is deleted when the run ends, so nothing of the request is kept (a run
  left waiting for a person, an approval or a connection, keeps its thread, and its id
  comes back).
- Stateful: the extension field ``thread_id`` (or header ``X-Oracle-Thread``) names a thread;
  only the last user message is posted to it, since the thread already holds the history.
  The thread id comes back in the ``X-Oracle-Thread`` header (and ``thread_id`` in a
  non-streamed body).

Client system messages are ignored: the oracle has its instructions.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastapi import APIRouter, Depends, Request
from starlette.responses import JSONResponse, Response

from oracle_core.server.bodies import ChatCompletionRequest, ChatMessage
from oracle_core.server.context import ServerContext
from oracle_core.server.errors import ApiError
from oracle_core.server.models import ErrorBody
from oracle_core.server.operations import waiting_message
from oracle_core.server.runs import RunHandle
from oracle_core.server.sse import PING, sse_message, sse_response, with_pings
from oracle_core.values.events import RunFinished, TextDelta
from oracle_core.values.messages import Message, Usage
from oracle_core.values.operations import Operation

MODEL_ID = "oracle"
"""The one model ``GET /v1/models`` lists; requests may name any model."""

THREAD_HEADER = "X-Oracle-Thread"
"""The header that names (on a request) or tells (on a response) the thread used."""

_NO_RETRY = {"x-should-retry": "false"}  # the openai client must not re-post a run that ran


def _bad(type: str, message: str) -> ApiError:
    return ApiError(400, type, message)


def _text(message: ChatMessage) -> str:
    content = message.content
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    for part in content:
        if part.get("type") != "text":
            raise _bad(
                "unsupported_content",
                f"only text content is supported, got a {part.get('type')!r} part",
            )
        parts.append(str(part.get("text") or ""))
    return "".join(parts)


def _seed(messages: list[ChatMessage]) -> list[Message]:
    """The earlier turns of a stateless request, as thread messages (text only)."""
    return [
        {"role": m.role, "content": _text(m)} for m in messages if m.role in ("user", "assistant")
    ]


def _usage(usage: Usage) -> dict[str, int]:
    return usage.as_dict()


def openai_router(ctx: ServerContext) -> APIRouter:
    """``GET /v1/models`` and ``POST /v1/chat/completions``; both need the token."""
    router = APIRouter(
        prefix="/v1",
        tags=["OpenAI-compatible"],
        dependencies=[Depends(ctx.auth)],
        responses={401: {"model": ErrorBody}, 400: {"model": ErrorBody}},
    )

    @router.get("/models")
    async def models() -> dict[str, Any]:
        """The oracle as the one model (any name is accepted in requests)."""
        return {
            "object": "list",
            "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "oracle"}],
        }

    @router.post("/chat/completions", responses={409: {"model": ErrorBody}})
    async def chat_completions(body: ChatCompletionRequest, request: Request) -> Response:
        """Run the last user message on an oracle thread; answer as OpenAI does (or stream)."""
        if body.tools:
            raise _bad(
                "tools_unsupported",
                "the oracle runs its own tools (its plugins); client-side `tools` are not "
                "supported: leave them out",
            )
        if body.n not in (None, 1):
            raise _bad("n_unsupported", "only n=1 is supported")
        last = body.messages[-1]
        if last.role != "user":
            raise _bad(
                "last_message_not_user",
                f"the last message must be the user's (role 'user'), not {last.role!r}",
            )
        text = ctx.check_message(_text(last))
        header = request.headers.get(THREAD_HEADER)
        if header and body.thread_id and header != body.thread_id:
            raise _bad(
                "thread_mismatch",
                f"the {THREAD_HEADER} header and thread_id name different threads",
            )
        thread_id = body.thread_id or header
        stateless = not thread_id
        if thread_id:
            ctx.check_thread_id(thread_id)
        else:
            thread_id = f"chat-{uuid.uuid4().hex[:20]}"
            seed = ctx.check_history(_seed(body.messages[:-1]))
            await ctx.oracle.checkpointer.append(thread_id, base=0, messages=seed)
        try:
            handle = ctx.runs.start(
                thread_id, text, user_id=body.user or "default", text_deltas=body.stream
            )
        except BaseException:
            if stateless:
                await ctx.oracle.checkpointer.delete(thread_id)
            raise
        headers = {} if stateless else {THREAD_HEADER: thread_id}
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        if not body.stream:
            try:
                result = await handle.result()
            finally:
                if stateless:
                    await _forget(ctx, thread_id)
            if stateless and result.status.startswith("waiting"):
                headers = {THREAD_HEADER: thread_id}
            waiting = result.status.startswith("waiting_for_")
            if result.status != "completed" and not waiting:
                raise ApiError(
                    500,
                    "run_failed",
                    f"run {result.run_id} on thread {thread_id!r} {result.status}: {result.error}",
                    {**headers, **_NO_RETRY},
                )
            return JSONResponse(
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {
                                "role": "assistant",
                                "content": (
                                    waiting_message(result.operations) if waiting else result.answer
                                ),
                            },
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": _usage(result.usage),
                    **({"thread_id": thread_id} if headers else {}),
                    "run_id": result.run_id,
                    **({"status": result.status} if waiting else {}),
                    **({"operations": [o.to_json() for o in result.operations]} if waiting else {}),
                },
                headers=headers,
            )
        if await handle.next() is None:  # run_started; a conflict becomes a 409 here
            if stateless:
                await _forget(ctx, thread_id)
            raise ApiError(500, "server_error", "the run ended before it started")
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        chunks = _chunks(
            handle, completion_id, body.model, include_usage, ctx.limits.sse_ping_seconds
        )
        if stateless:
            chunks = _forgetting(chunks, ctx, thread_id)
        return sse_response(chunks, {**headers, **_NO_RETRY})

    return router


async def _forget(ctx: ServerContext, thread_id: str) -> None:
    """Delete a stateless request's thread once its run has ended (unless it waits).

    Shielded: a client that hangs up cancels its response, and anyio would cancel every
    await of this clean-up too, leaving the thread behind.
    """
    with anyio.CancelScope(shield=True):
        await ctx.runs.wait(thread_id)
        state = await ctx.oracle.checkpointer.load(thread_id)
        if not any(run.status.startswith("waiting") for run in state.runs):
            await ctx.oracle.checkpointer.delete(thread_id)


async def _forgetting(
    chunks: AsyncIterator[bytes], ctx: ServerContext, thread_id: str
) -> AsyncIterator[bytes]:
    """``chunks``, then the stateless request's thread forgotten, however the stream ends."""
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        await _forget(ctx, thread_id)


async def _chunks(
    handle: RunHandle, completion_id: str, model: str, include_usage: bool, ping: float
) -> AsyncIterator[bytes]:
    """The run as ``chat.completion.chunk`` messages, then ``data: [DONE]``.

    Text the model writes is streamed as it comes (text written before a tool call
    included); a failed run, or one the stopping server cancelled, ends with an
    OpenAI-style ``{"error": ...}`` message.
    """
    base = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse_message({**base, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    streamed = finished = False
    try:
        async for event in with_pings(handle, ping):
            if event is None:
                yield PING
            elif isinstance(event, TextDelta) and event.text:
                streamed = True
                yield chunk({"content": event.text})
            elif isinstance(event, RunFinished):
                finished = True
                if event.status.startswith("waiting_for_"):  # tell the client how to decide
                    waits = [Operation.from_record(o) for o in event.operations]
                    yield chunk({"content": waiting_message(waits)})
                    yield chunk({}, "stop")
                    continue
                if event.status != "completed":
                    yield _error(f"run {event.run_id} {event.status}: {event.error}")
                    break
                if event.answer and not streamed:
                    yield chunk({"content": event.answer})
                yield chunk({}, "stop")
                if include_usage:
                    yield sse_message({**base, "choices": [], "usage": _usage(event.usage)})
        if not finished:
            yield _error(handle.cancelled().message)
    except Exception as error:
        yield _error(f"the run broke down: {type(error).__name__}: {error}")
    yield b"data: [DONE]\n\n"


def _error(message: str) -> bytes:
    return sse_message(
        {"error": {"message": message, "type": "server_error", "code": "run_failed"}}
    )
