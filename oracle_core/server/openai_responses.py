"""An OpenAI-compatible ``POST /v1/responses`` (the Responses API), backed by oracle threads.

The same run as ``/v1/chat/completions`` (:mod:`oracle_core.server.openai_compat`), in the
Responses API's shapes: ``input`` (a string, or items: messages, ``function_call`` and
``function_call_output``), flat function ``tools``, ``text.format`` for structured output,
``output`` items in the answer, and typed stream events.

A conversation is a thread. A response's id names its thread and its run; a request with
``previous_response_id`` continues that thread, which must be the requesting user's and
must end with that response (a conversation cannot fork). Without one, a new thread is made
(kept, as the Responses API keeps responses, unless ``store`` is false).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse, Response

from oracle_core.server.context import ServerContext
from oracle_core.server.errors import ApiError
from oracle_core.server.models import ErrorBody
from oracle_core.server.openai_compat import (
    OPERATIONS_HEADER,
    PERSON_WAITS,
    forget_thread,
    forgetting,
    oracle_signal,
)
from oracle_core.server.openai_request import bad, chat_turn
from oracle_core.server.operations import waiting_message
from oracle_core.server.runs import RunHandle
from oracle_core.server.sse import PING, sse_message, sse_response, with_pings
from oracle_core.values.events import RunFinished, TextDelta
from oracle_core.values.ids import check_user_id
from oracle_core.values.messages import Usage
from oracle_core.values.operations import Operation
from oracle_core.values.result import RunResult

_RESPONSE_ID = re.compile(r"resp_([0-9a-f]{32})([0-9a-f]{16})")
_NO_RETRY = {"x-should-retry": "false"}


class ResponsesRequest(BaseModel):
    """OpenAI ``POST /v1/responses``: every field is used, forwarded or refused."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(description="Any name; it is echoed back (the oracle has one model).")
    input: str | list[dict[str, Any]] = Field(description="A message, or input items.")
    stream: bool = False
    user: str | None = Field(None, description="Who the run acts for.")
    previous_response_id: str | None = None
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    text: dict[str, Any] | None = None
    max_output_tokens: int | None = None
    store: bool | None = None


def thread_of(response_id: str, user: str) -> tuple[str, str]:
    """The thread and run a response id names, for ``user`` (another user's is not found).

    Raises:
        ApiError: 400 for an id that is not one of this server's responses.
    """
    match = _RESPONSE_ID.fullmatch(response_id)
    if match is None:
        raise bad("invalid_previous_response", f"{response_id[:80]!r} is not a response id here")
    return _thread_id(match.group(1), user), f"run_{match.group(2)}"


def _thread_id(conversation: str, user: str) -> str:
    owner = hashlib.sha256(user.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"resp-{owner}-{conversation}"


def response_id(thread_id: str, run_id: str) -> str:
    """The id of the response a run of a responses thread gave."""
    return f"resp_{thread_id.rsplit('-', 1)[1]}{run_id.removeprefix('run_')}"


def _as_chat(body: ResponsesRequest) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The request as chat messages and chat fields (what :func:`chat_turn` reads)."""
    fields = body.model_dump(exclude={"input", "previous_response_id"}, exclude_unset=True)
    for name in ("instructions", "store"):  # the oracle has its instructions; see `store`
        fields.pop(name, None)
    if "max_output_tokens" in fields:
        fields["max_tokens"] = fields.pop("max_output_tokens")
    if "tools" in fields:
        fields["tools"] = [_chat_tool(t, i) for i, t in enumerate(fields["tools"] or [])]
    text = fields.pop("text", None) or {}
    form = text.get("format") if isinstance(text, Mapping) else None
    if isinstance(form, Mapping) and form.get("type") == "json_schema":
        schema = {k: form[k] for k in ("name", "schema", "strict", "description") if k in form}
        fields["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif isinstance(form, Mapping) and form.get("type") == "json_object":
        fields["response_format"] = {"type": "json_object"}
    if isinstance(fields.get("tool_choice"), Mapping) and "name" in fields["tool_choice"]:
        choice = fields["tool_choice"]
        fields["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    if isinstance(body.input, str):
        return [{"role": "user", "content": body.input}], fields
    messages: list[dict[str, Any]] = []
    for index, item in enumerate(body.input):
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item.get("role"), "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and last.get("tool_calls"):
                last["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            content = output if isinstance(output, str) else _text(output)
            messages.append(
                {"role": "tool", "tool_call_id": item.get("call_id"), "content": content}
            )
        else:
            raise bad("unsupported_input", f"input[{index}] is a {kind!r} item: not supported")
    if not messages:
        raise bad("invalid_input", "input holds no item")
    return messages, fields


def _text(content: Any) -> Any:
    """Input content parts as chat text parts (``input_text``, ``output_text`` are text)."""
    if not isinstance(content, list):
        return content
    return [
        {"type": "text", "text": p.get("text")}
        if isinstance(p, Mapping) and p.get("type") in ("input_text", "output_text", "text")
        else p
        for p in content
    ]


def _chat_tool(tool: Any, index: int) -> dict[str, Any]:
    """A Responses function tool (flat) as a chat tool."""
    if not isinstance(tool, Mapping) or tool.get("type") != "function":
        kind = tool.get("type") if isinstance(tool, Mapping) else type(tool).__name__
        raise bad("invalid_tools", f"tools[{index}] is a {kind!r} tool: only function tools")
    function = {k: tool[k] for k in ("name", "description", "parameters") if k in tool}
    return {"type": "function", "function": function}


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def _output(result: RunFinished | RunResult) -> list[dict[str, Any]]:
    """The response's output items for a finished run."""
    if result.status == "waiting_for_client":
        return [
            {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex[:24]}",
                "call_id": c["id"],
                "name": c["function"]["name"],
                "arguments": c["function"]["arguments"],
                "status": "completed",
            }
            for c in result.client_calls
        ]
    if result.status in PERSON_WAITS:
        waits = [
            o if isinstance(o, Operation) else Operation.from_record(o) for o in result.operations
        ]
        text = waiting_message(waits)
    else:
        text = result.answer
    return [_message(text)]


def _message(text: str, status: str = "completed") -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _response(
    body: ResponsesRequest, thread_id: str, finished: RunFinished | RunResult, stored: bool
) -> dict[str, Any]:
    """The ``response`` object of a finished run: ``incomplete`` when it waits for a person
    (the reason is the wait) or its answer was cut at the model's output limit
    (``max_output_tokens``, as OpenAI says)."""
    waiting = finished.status in PERSON_WAITS
    incomplete = {"reason": finished.status} if waiting else None
    if finished.truncated:  # only a completed run is ever cut off
        incomplete = {"reason": "max_output_tokens"}
    waits = [
        o if isinstance(o, Operation) else Operation.from_record(o) for o in finished.operations
    ]
    return {
        "id": response_id(thread_id, finished.run_id),
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": incomplete,
        "error": None,
        "model": body.model,
        "output": _output(finished),
        "usage": _usage(finished.usage),
        "previous_response_id": body.previous_response_id,
        "store": stored,
        "tools": body.tools or [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "text": body.text or {"format": {"type": "text"}},
        "metadata": {},
        **(
            {"oracle": oracle_signal(finished.status, finished.run_id, thread_id, waits)}
            if waiting
            else {}
        ),
    }


def responses_router(ctx: ServerContext) -> APIRouter:
    """``POST /v1/responses``; it needs the token."""
    router = APIRouter(
        prefix="/v1",
        tags=["OpenAI-compatible"],
        dependencies=[Depends(ctx.auth)],
        responses={401: {"model": ErrorBody}, 400: {"model": ErrorBody}},
    )

    @router.post("/responses", responses={409: {"model": ErrorBody}})
    async def create_response(body: ResponsesRequest) -> Response:
        """Run the input on a thread (a new one, or ``previous_response_id``'s)."""
        user = check_user_id(body.user, "user") if body.user else "default"
        messages, fields = _as_chat(body)
        if body.previous_response_id:
            thread_id, run_id = thread_of(body.previous_response_id, user)
            state = await ctx.oracle.checkpointer.load(thread_id)
            if not state.runs or state.runs[-1].id != run_id:
                raise bad(
                    "invalid_previous_response",
                    f"previous_response_id {body.previous_response_id!r} is not the latest "
                    "response of a conversation of this user: continue from the latest one",
                )
        else:
            thread_id = _thread_id(uuid.uuid4().hex, user)
        # In a worker thread: a text.format's schema check is bounded, not quick.
        turn = await asyncio.to_thread(
            chat_turn, messages, fields, stateless=not body.previous_response_id
        )
        if turn.message is not None:
            turn.message = ctx.check_message(turn.message)
        if turn.history:
            seed = ctx.check_history(turn.history)
            await ctx.oracle.checkpointer.append(thread_id, base=0, messages=seed)
        stored = body.store is not False
        handle = ctx.runs.start(
            thread_id,
            turn.message,
            user_id=user,
            text_deltas=body.stream,
            tool_results=turn.tool_results,
            options=turn.options,
        )
        if not body.stream:
            try:
                result = await handle.result()
            finally:
                if not stored:
                    await forget_thread(ctx, thread_id)
            if result.status not in ("completed", "waiting_for_client", *PERSON_WAITS):
                raise ApiError(
                    500,
                    "run_failed",
                    f"run {result.run_id} {result.status}: {result.error}",
                    _NO_RETRY,
                )
            waits = {OPERATIONS_HEADER: ",".join(o.id for o in result.operations)}
            headers = waits if result.status in PERSON_WAITS else {}
            return JSONResponse(_response(body, thread_id, result, stored), headers=headers)
        if await handle.next() is None:
            raise ApiError(500, "server_error", "the run ended before it started")
        events = _events(handle, body, thread_id, stored, ctx.limits.sse_ping_seconds)
        if not stored:
            events = forgetting(events, ctx, thread_id)
        return sse_response(events, _NO_RETRY)

    return router


async def _events(
    handle: RunHandle, body: ResponsesRequest, thread_id: str, stored: bool, ping: float
) -> AsyncIterator[bytes]:
    """The run as the Responses API's typed stream events."""
    number = 0

    def event(kind: str, **data: Any) -> bytes:
        nonlocal number
        number += 1
        return sse_message({"type": kind, "sequence_number": number, **data}, kind)

    draft = {
        "id": f"resp_{uuid.uuid4().hex}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": body.model,
        "output": [],
    }
    yield event("response.created", response=draft)
    item = _message("", "in_progress")
    text = ""
    opened = False
    try:
        async for item_event in with_pings(handle, ping):
            if item_event is None:
                yield PING
            elif isinstance(item_event, TextDelta) and item_event.text:
                if not opened:
                    opened = True
                    yield event(
                        "response.output_item.added", output_index=0, item={**item, "content": []}
                    )
                    yield event(
                        "response.content_part.added",
                        item_id=item["id"], output_index=0, content_index=0,
                        part={"type": "output_text", "text": "", "annotations": []},
                    )  # fmt: skip
                text += item_event.text
                yield event(
                    "response.output_text.delta",
                    item_id=item["id"], output_index=0, content_index=0, delta=item_event.text,
                )  # fmt: skip
            elif isinstance(item_event, RunFinished):
                if item_event.status not in ("completed", "waiting_for_client", *PERSON_WAITS):
                    error = {
                        "code": "run_failed",
                        "message": f"{item_event.status}: {item_event.error}",
                    }
                    yield event(
                        "response.failed", response={**draft, "status": "failed", "error": error}
                    )
                    return
                final = _response(body, thread_id, item_event, stored)
                if opened:
                    yield event(
                        "response.output_text.done",
                        item_id=item["id"], output_index=0, content_index=0, text=text,
                    )  # fmt: skip
                if opened and final["output"][0]["type"] != "message":  # text, then calls
                    done = {**item, "status": "completed"}
                    done["content"] = [{"type": "output_text", "text": text, "annotations": []}]
                    final["output"].insert(0, done)
                for index, out in enumerate(final["output"]):
                    if not (opened and out["type"] == "message"):
                        yield event("response.output_item.added", output_index=index, item=out)
                    yield event("response.output_item.done", output_index=index, item=out)
                kind = (
                    "response.incomplete"
                    if final["status"] == "incomplete"
                    else "response.completed"
                )
                yield event(kind, response=final)
                return
        yield event(
            "response.failed",
            response={
                **draft,
                "status": "failed",
                "error": {"code": "cancelled", "message": handle.cancelled().message},
            },
        )
    except Exception as error:
        failure = {"code": "run_failed", "message": f"{type(error).__name__}: {error}"}
        yield event("response.failed", response={**draft, "status": "failed", "error": failure})
