"""Asking the model for one step of a run: through the middleware, within the run's time.

:func:`ask_model` is the one place a model's reply enters a run. It sends the step's
request through the middleware chain (``before_model_call``, ``wrap_model_call``,
``after_model_call``), streams the reply's text as it comes when the run streams, and
records exactly which tools reached the provider (what the capability gate later checks
calls against). The reply is cleaned (valid Unicode in every string) and its tool calls are
read as typed values (:func:`~oracle_core.models.wire.typed`) before anything else sees it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

from oracle_core.capabilities.gate import sent_names
from oracle_core.errors import RunLimitError
from oracle_core.models.wire import typed
from oracle_core.run.deps import RunDeps
from oracle_core.run.state import RunState
from oracle_core.values.events import TextDelta
from oracle_core.values.messages import ModelRequest, ModelResponse
from oracle_core.values.text import StreamText, clean_json, clean_text

Asked = tuple[ModelResponse, frozenset[str]]
"""A model's reply and the names of the tools the provider was sent with its request."""


async def ask_model(
    deps: RunDeps, state: RunState, request: ModelRequest
) -> AsyncIterator[TextDelta | Asked]:
    """Ask the model through the middleware; yields text deltas, then the response and
    the names of the tools the provider was sent (read once, as it was sent).

    Its text is cleaned here (:func:`~oracle_core.values.text.clean_text`), so the answer,
    the events and every surface built from them carry valid Unicode, not only what is saved.

    Raises:
        RunLimitError: the run's time limit came before the reply.
    """
    chain = deps.middleware
    model = deps.model
    queue: asyncio.Queue[TextDelta] = asyncio.Queue()
    sent: list[tuple[ModelRequest, frozenset[str]]] = []

    async def call_model(req: ModelRequest) -> ModelResponse:
        sent.append((req, sent_names(req.tools)))  # exactly what the provider is sent
        if not state.stream:
            return await model.complete(req)
        final: ModelResponse | None = None
        text = StreamText()
        async for piece in model.stream(req):
            if isinstance(piece, ModelResponse):
                final = piece
            elif delta := text.feed(str(piece)):
                queue.put_nowait(TextDelta(delta))
        if rest := text.flush():
            queue.put_nowait(TextDelta(rest))
        assert final is not None
        return final

    async def whole() -> Asked:
        changed = await chain.before_model(request)
        try:
            response = typed(clean_response(await chain.wrap_model(changed, call_model)))
        except Exception as error:
            await chain.notify(error, changed)
            raise
        # A middleware that answered without calling the model sent nothing: its
        # response may only call what the request it saw offered.
        shown, names = sent[-1] if sent else (changed, sent_names(changed.tools))
        await chain.after_model(shown, response)
        return response, names

    task = asyncio.ensure_future(whole())
    getter: asyncio.Future[TextDelta] | None = None
    try:
        while not task.done():
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait(
                {task, getter}, timeout=remaining(state), return_when=asyncio.FIRST_COMPLETED
            )
            if getter.done():
                yield getter.result()
                continue
            getter.cancel()
            if not task.done():
                raise RunLimitError(
                    f"the run took longer than its limit of {deps.limits.run_timeout:g} s "
                    "(waiting for the model); raise it with RunLimits(run_timeout=...)"
                )
        while not queue.empty():
            yield queue.get_nowait()
        yield task.result()
    finally:
        if getter is not None and not getter.done():
            getter.cancel()  # a run cancelled while waiting must not leave it pending
        if not task.done():
            task.cancel()


def remaining(state: RunState) -> float:
    """Seconds left before the run's time limit (0 when it has passed)."""
    return max(0.0, state.deadline - asyncio.get_running_loop().time())


def clean_response(response: ModelResponse) -> ModelResponse:
    """``response`` with every string of its message and calls cleaned (lone surrogates
    replaced)."""
    message = clean_json(dict(response.message))
    calls = tuple(
        c.replace(id=clean_text(c.id), name=clean_text(c.name), arguments=clean_text(c.arguments))
        for c in response.calls
    )
    return dataclasses.replace(response, message=message, calls=calls)
