"""An OpenAI-compatible ``POST /v1/chat/completions``, backed by an oracle thread.

Any OpenAI client talks to the oracle with its plugins: the oracle runs its own tools
(meta-tools included) inside one request and answers with the final text. A client's own
``tools`` are offered beside the oracle's; a call of one comes back as ``tool_calls``
(``finish_reason: "tool_calls"``), and the client's next request with the ``tool``
messages continues the same run. Sampling options are forwarded to the model or refused
(:mod:`oracle_core.server.openai_request`). A run that waits for a person answers with its
status as ``finish_reason`` and an ``oracle`` object naming the operations and how to
settle them; the same request sent again afterwards gets the answer. Two ways in:

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

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
from fastapi import APIRouter, Depends, Request
from starlette.responses import JSONResponse, Response

from oracle_core.models.wire import call_entry, calls_of
from oracle_core.server.bodies import ChatCompletionRequest
from oracle_core.server.context import ServerContext
from oracle_core.server.errors import ApiError
from oracle_core.server.models import ErrorBody
from oracle_core.server.openai_request import bad, chat_turn, transcript_key
from oracle_core.server.operations import waiting_message
from oracle_core.server.runs import RunHandle
from oracle_core.server.sse import PING, sse_message, sse_response, with_pings
from oracle_core.store.facets import facet_of
from oracle_core.values.events import RunFinished, TextDelta
from oracle_core.values.ids import check_user_id
from oracle_core.values.messages import FINISH_LENGTH, Usage
from oracle_core.values.operations import Operation
from oracle_core.values.result import RunResult
from oracle_core.values.threads import ThreadState

MODEL_ID = "oracle"
"""The one model ``GET /v1/models`` lists; requests may name any model."""

KEEP_PREFIX = "chat-keep-"
"""Threads holding only the loads a stateless conversation keeps for its next request."""

THREAD_HEADER = "X-Oracle-Thread"
"""The header that names (on a request) or tells (on a response) the thread used."""

OPERATIONS_HEADER = "X-Oracle-Operations"
"""On an answer whose run waits for a person: the ids of the operations it waits on."""

_NO_RETRY = {"x-should-retry": "false"}  # the openai client must not re-post a run that ran


PERSON_WAITS = ("waiting_for_approval", "waiting_for_connection")
"""Statuses of a run that waits for a person: answered with that status as ``finish_reason``
and an ``oracle`` object saying what it waits on and how to settle it."""


def _usage(usage: Usage) -> dict[str, int]:
    return usage.as_dict()


def oracle_signal(
    result_status: str, run_id: str, thread_id: str, waits: list[Operation]
) -> dict[str, Any]:
    """The machine-readable part of an answer whose run waits for a person."""
    return {
        "status": result_status,
        "thread_id": thread_id,
        "run_id": run_id,
        "operations": [
            {
                **o.to_json(),
                "decide": (
                    {
                        "method": "POST",
                        "path": f"/operations/{o.id}/decision",
                        "body": {"approve": True},
                    }
                    if o.kind == "approval"
                    else {
                        "method": "PUT",
                        "path": f"/connections/{o.plugin}/{o.details.get('connection', '')}",
                        "body": {"value": "..."},
                    }
                ),
            }
            for o in waits
        ],
        "then": "send the same request again (with this thread) for the answer",
    }


def _completion(
    model: str, result: RunResult, thread_id: str, headers: dict[str, str]
) -> JSONResponse:
    """A ``chat.completion`` for a finished run: its answer, the client tools' calls it
    hands back, or the wait it stopped for."""
    message: dict[str, Any] = {"role": "assistant", "content": result.answer}
    finish = FINISH_LENGTH if result.truncated else "stop"  # cut at the model's output limit
    extra: dict[str, Any] = {}
    if result.status == "waiting_for_client":
        message = {"role": "assistant", "content": None, "tool_calls": result.client_calls}
        finish = "tool_calls"
    elif result.status in PERSON_WAITS:
        message["content"] = waiting_message(result.operations)
        finish = result.status
        extra["oracle"] = oracle_signal(result.status, result.run_id, thread_id, result.operations)
        extra["status"] = result.status  # as before the `oracle` object, for older clients
        extra["operations"] = [o.to_json() for o in result.operations]
        headers = {**headers, OPERATIONS_HEADER: ",".join(o.id for o in result.operations)}
    return JSONResponse(
        {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(result.usage),
            **({"thread_id": thread_id} if headers else {}),
            "run_id": result.run_id,
            **extra,
        },
        headers=headers,
    )


async def _answered_after_wait(ctx: ServerContext, thread_id: str, text: str) -> RunResult | None:
    """The answer of the thread's last run, when this request only repeats its message.

    A client told that its request waits for a person sends the same request again once
    someone decided; the run that waited has answered by then (the decision resumed it), so
    that answer is the response, and no second run starts.
    """
    deps = await ctx.oracle.run_deps()
    operations = facet_of(deps.store, "operations")
    if operations is None:  # a store without operations: no run of it ever waited
        return None
    # The thread's waits first: most threads have none, so most turns read nothing more.
    waited = {
        o.run_id for o in await operations.list_operations(thread_id=thread_id)
        if o.kind != "background" and o.resumed_at is not None
    }  # fmt: skip
    if not waited:
        return None
    state = await ctx.oracle.checkpointer.load(thread_id)
    if not state.runs or state.runs[-1].status != "completed" or not state.messages:
        return None
    run, last = state.runs[-1], state.messages[-1]
    users = [m for m in state.messages if m.get("role") == "user"]
    if last.get("role") != "assistant" or last.get("tool_calls") or not users:
        return None
    if run.id not in waited or users[-1].get("content") != text:
        return None
    return RunResult(run.id, thread_id, "completed", str(last.get("content") or ""), run.usage)


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

    @router.get("/models/{model_id}")
    async def model(model_id: str) -> dict[str, Any]:
        """The oracle as a model (``models.retrieve``): its own id only."""
        if model_id != MODEL_ID:
            raise ApiError(
                404, "model_not_found", f"the one model here is {MODEL_ID!r}, not {model_id!r}"
            )
        return {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "oracle"}

    @router.post("/chat/completions", responses={409: {"model": ErrorBody}})
    async def chat_completions(body: ChatCompletionRequest, request: Request) -> Response:
        """Run the last user message (or the client tools' results) on an oracle thread;
        answer as OpenAI does (or stream)."""
        if body.n not in (None, 1):
            raise bad("n_unsupported", "only n=1 is supported")
        header = request.headers.get(THREAD_HEADER)
        if header and body.thread_id and header != body.thread_id:
            raise bad(
                "thread_mismatch",
                f"the {THREAD_HEADER} header and thread_id name different threads",
            )
        thread_id = body.thread_id or header
        stateless = not thread_id
        fields = body.model_dump(exclude={"messages"}, exclude_unset=True)
        messages = [m.model_dump(exclude_unset=True) for m in body.messages]
        # In a worker thread: a response_format's schema check is bounded, not quick.
        turn = await asyncio.to_thread(chat_turn, messages, fields, stateless=stateless)
        if turn.message is not None:
            turn.message = ctx.check_message(turn.message)
        user_id = check_user_id(body.user, "user") if body.user else "default"
        if thread_id:
            ctx.check_thread_id(thread_id)
            if turn.message is not None and (
                replay := await _answered_after_wait(ctx, thread_id, turn.message)
            ):
                return _completion(body.model, replay, thread_id, {THREAD_HEADER: thread_id})
        else:
            thread_id = f"chat-{uuid.uuid4().hex[:20]}"
            seed = ctx.check_history(turn.history)
            loads = await carried_loads(ctx, user_id, messages[: turn.before])
            await ctx.oracle.checkpointer.append(thread_id, base=0, messages=seed, loaded=loads)
        carry = Carry(user_id, messages, turn.options.client_names) if stateless else None
        try:
            handle = ctx.runs.start(
                thread_id,
                turn.message,
                user_id=user_id,
                text_deltas=body.stream,
                tool_results=turn.tool_results,
                options=turn.options,
            )
        except BaseException:
            if stateless:
                await ctx.oracle.checkpointer.delete(thread_id)
            raise
        headers = {} if stateless else {THREAD_HEADER: thread_id}
        if not body.stream:
            try:
                result = await handle.result()
            finally:
                if stateless:
                    await forget_thread(ctx, thread_id, carry)
            if stateless and result.status in PERSON_WAITS:
                headers = {THREAD_HEADER: thread_id}
            if result.status not in ("completed", "waiting_for_client", *PERSON_WAITS):
                raise ApiError(
                    500,
                    "run_failed",
                    f"run {result.run_id} on thread {thread_id!r} {result.status}: {result.error}",
                    {**headers, **_NO_RETRY},
                )
            return _completion(body.model, result, thread_id, headers)
        try:
            started = await handle.next()  # run_started; a refused request raises here
        except BaseException:
            if stateless:
                await forget_thread(ctx, thread_id)
            raise
        if started is None:
            if stateless:
                await forget_thread(ctx, thread_id)
            raise ApiError(500, "server_error", "the run ended before it started")
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        chunks = _chunks(
            handle, completion_id, body.model, include_usage, ctx.limits.sse_ping_seconds, thread_id
        )
        if stateless:
            chunks = forgetting(chunks, ctx, thread_id, carry)
        return sse_response(chunks, {**headers, **_NO_RETRY})

    return router


@dataclass(frozen=True)
class Carry:
    """What a stateless request's thread leaves for the client's next request: its loads,
    keyed by the conversation as the client will send it back (see :func:`carried_loads`).

    Attributes:
        user: whose conversation.
        messages: the request's messages, as sent.
        client_names: the names of the request's client tools.
    """

    user: str
    messages: list[dict[str, Any]]
    client_names: frozenset[str]


async def carried_loads(ctx: ServerContext, user: str, before: list[dict[str, Any]]) -> list[str]:
    """The plugins a stateless conversation had loaded, when this request continues one.

    A stateless client sends the whole conversation each time; the oracle keeps no thread
    for it, but it keeps the loads of each finished turn under a digest of the conversation
    as the client will send it next (:func:`~oracle_core.server.openai_request.transcript_key`,
    with the user), so the next turn starts with them instead of loading them again.
    """
    kept = KEEP_PREFIX + transcript_key(user, before)
    return list((await ctx.oracle.checkpointer.load(kept)).loaded_plugins)


async def forget_thread(ctx: ServerContext, thread_id: str, carry: Carry | None = None) -> None:
    """Delete a stateless request's thread once its run has ended (unless it waits).

    ``carry``: keep its loads for the client's next request first. Shielded: a client that
    hangs up cancels its response, and anyio would cancel every await of this clean-up
    too, leaving the thread behind.
    """
    with anyio.CancelScope(shield=True):
        await ctx.runs.wait(thread_id)
        store = ctx.oracle.checkpointer
        state = await store.load(thread_id)
        if any(run.status in PERSON_WAITS for run in state.runs):
            return
        if carry is not None and state.loaded_plugins and (reply := _reply(state, carry)):
            kept = KEEP_PREFIX + transcript_key(carry.user, [*carry.messages, reply])
            await store.append(kept, base=0, loaded=list(state.loaded_plugins))
        await store.delete(thread_id)


def _reply(state: ThreadState, carry: Carry) -> dict[str, Any] | None:
    """The assistant message the client got for the thread's last run (``None``: none)."""
    run = state.runs[-1] if state.runs else None
    last = state.messages[-1] if state.messages else {}
    if run is None or last.get("role") != "assistant":
        return None
    if run.status == "completed":
        return {"role": "assistant", "content": str(last.get("content") or "")}
    if run.status == "waiting_for_client":
        handed = [call_entry(c) for c in calls_of(last) if c.name in carry.client_names]
        return {"role": "assistant", "content": None, "tool_calls": handed}
    return None


async def forgetting(
    chunks: AsyncIterator[bytes], ctx: ServerContext, thread_id: str, carry: Carry | None = None
) -> AsyncIterator[bytes]:
    """``chunks``, then the stateless request's thread forgotten, however the stream ends."""
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        await forget_thread(ctx, thread_id, carry)


async def _chunks(
    handle: RunHandle,
    completion_id: str,
    model: str,
    include_usage: bool,
    ping: float,
    thread_id: str,
) -> AsyncIterator[bytes]:
    """The run as ``chat.completion.chunk`` messages, then ``data: [DONE]``.

    Text the model writes is streamed as it comes (text written before a tool call
    included); the client tools' calls a run hands back come as ``tool_calls`` deltas with
    ``finish_reason: "tool_calls"``; a run waiting for a person ends with its status as the
    ``finish_reason`` and the ``oracle`` object; a failed run, or one the stopping server
    cancelled, ends with an OpenAI-style ``{"error": ...}`` message.
    """
    base = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse_message({**base, "choices": [choice], **extra})

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
                if event.status == "waiting_for_client":  # the client runs these
                    calls = [{"index": i, **c} for i, c in enumerate(event.client_calls)]
                    yield chunk({"tool_calls": calls})
                    yield chunk({}, "tool_calls")
                    continue
                if event.status in PERSON_WAITS:  # tell the client how to decide
                    waits = [Operation.from_record(o) for o in event.operations]
                    signal = oracle_signal(event.status, event.run_id, thread_id, waits)
                    yield chunk({"content": waiting_message(waits)})
                    yield chunk({}, event.status, oracle=signal)
                    continue
                if event.status != "completed":
                    yield _error(f"run {event.run_id} {event.status}: {event.error}")
                    break
                if event.answer and not streamed:
                    yield chunk({"content": event.answer})
                yield chunk({}, FINISH_LENGTH if event.truncated else "stop")
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
