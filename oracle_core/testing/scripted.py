"""Scripted models for tests: queue their replies, then inspect every request they were sent.

:class:`ScriptedModel` answers in the test process, like pydantic-ai's ``TestModel``: no
litellm, no HTTP, no server. It still records each call as the OpenAI request body that would
have gone over the wire (built from :meth:`~oracle_core.values.messages.ModelRequest.openai_messages`
and :meth:`~oracle_core.values.messages.ModelRequest.openai_tools`), so a test reads exactly what
the model was shown. :class:`~oracle_core.testing.HTTPScriptedModel` has the same scripting
API and goes through litellm over loopback HTTP instead; both share
:class:`ScriptedModelBase`.

    model = ScriptedModel()
    model.reply_tool_call("load_capability", {"names": ["weather"]})
    model.reply_text("Sunny.")
    oracle = Oracle([weather], entry_points=False, model=model)
    ...
    assert "get_forecast" in model.request(2).tool_names
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Self

from oracle_core.models.base import Model, ModelError, assistant_message
from oracle_core.models.completions import CALL_SETTINGS, limit_output, wire_messages
from oracle_core.models.wire import calls_of
from oracle_core.testing.script import Reply, ReplyQueue, SeenRequest
from oracle_core.values.messages import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from oracle_core.values.result import RunResult

CALL_HEADER = "x-oracle-test-call"
"""The header that ties a recorded request back to the run and step that made it."""

CLIENT_OPTIONS = frozenset(
    {
        "api_base",
        "api_key",
        "api_version",
        "base_url",
        "custom_llm_provider",
        "drop_params",
        "extra_headers",
        "max_retries",
        "metadata",
        *CALL_SETTINGS,  # timeout, num_retries, retry_on
    }
)
"""Model options that configure the client (litellm) and never reach the request body."""

ToolCallSpec = tuple[str, "dict[str, Any] | str"]
"""A tool call to script: ``(tool name, arguments)``; arguments may be raw text (even bad JSON)."""


@dataclass
class ModelCall(SeenRequest):
    """One request the oracle sent to a scripted model, exactly as it went over the wire.

    Besides the raw request (``body``, ``messages``, ``system_prompt``, ``tools``,
    ``tool_names``, ``tool_results``) it knows which run step made it.

    Attributes:
        index: its position among all the requests this model received (0 for the first).
        step: the run's step that made it (1 for a run's first model call, then 2, 3, ...).
        run_id: the run that made it.
        thread_id: the thread that run works on.
    """

    index: int = 0
    step: int | None = None
    run_id: str | None = None
    thread_id: str | None = None

    @property
    def user_message(self) -> str:
        """The text of the latest user message sent ("" if none)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return str(message.get("content") or "")
        return ""

    def tool(self, name: str) -> dict[str, Any]:
        """The function definition shown for tool ``name`` (``name``, ``description``, ``parameters``).

        Raises:
            LookupError: when that tool was not shown on this call.
        """
        for definition in self.tools:
            if definition["function"]["name"] == name:
                return dict(definition["function"])
        raise LookupError(
            f"tool {name!r} was not shown on {self.describe()}; shown: {', '.join(self.tool_names)}"
        )

    def describe(self) -> str:
        """Where this call happened, for messages: ``"step 2 of run run_..."``."""
        if self.step is None:
            return f"request {self.index}"
        return f"step {self.step} of run {self.run_id}"


ReplyFunction = Callable[[ModelCall], "Reply | str"]
"""A function that answers one model call: a :class:`Reply`, or a string for a text answer."""


class ScriptedModelBase(Model):
    """The scripting and recording shared by :class:`ScriptedModel` and ``HTTPScriptedModel``.

    Queue replies in the order the oracle will ask for them with :meth:`reply_text`,
    :meth:`reply_tool_call`, :meth:`reply_tool_calls`, :meth:`reply_error` and
    :meth:`reply_with`; :meth:`respond_with` answers every request left without a queued
    reply. A request with no reply fails its run with a message saying so. Afterwards,
    :attr:`requests` and :meth:`request` show what the model was sent. It is a context
    manager; leaving the block :meth:`close`\\ s it.

    Args:
        replies: the queue that answers and records this model's requests.
    """

    def __init__(self, replies: ReplyQueue) -> None:
        self._replies = replies
        self._made: dict[str, tuple[int, str, str]] = {}
        self._lock = threading.Lock()
        replies.respond_with(self._no_reply_left)

    # -- scripting ---------------------------------------------------------------------------

    def reply_text(self, text: str, *, usage: tuple[int, int] | None = None) -> Self:
        """Queue a final text answer.

        Args:
            text: the answer.
            usage: the ``(prompt_tokens, completion_tokens)`` the provider reports.
        """
        self._replies.script(replace(Reply.text(text), usage=usage))
        return self

    def reply_tool_call(
        self,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        *,
        usage: tuple[int, int] | None = None,
    ) -> Self:
        """Queue an answer that calls one tool (``arguments`` may be raw text, even bad JSON)."""
        self._replies.script(replace(Reply.call(name, arguments), usage=usage))
        return self

    def reply_tool_calls(
        self, calls: Iterable[ToolCallSpec], *, usage: tuple[int, int] | None = None
    ) -> Self:
        """Queue one answer that calls several tools at once: ``[(name, arguments), ...]``."""
        self._replies.script(replace(Reply.calls(*calls), usage=usage))
        return self

    def reply_error(self, status: int = 500, message: str = "scripted error") -> Self:
        """Queue the provider failing with HTTP ``status``: the call raises a ``ModelError``."""
        self._replies.script(Reply.error(status, message))
        return self

    def reply_with(self, function: ReplyFunction) -> Self:
        """Queue a function that answers one request from its :class:`ModelCall`.

        It returns a :class:`Reply` (``Reply.text``, ``Reply.call``, ``Reply.calls``) or a
        string for a text answer. If it raises, the request fails with HTTP 500 naming the
        error.
        """
        self._replies.script(self._responder(function))
        return self

    def respond_with(self, function: ReplyFunction | None) -> Self:
        """Answer every request that has no queued reply from ``function`` (``None``: stop)."""
        self._replies.respond_with(
            self._responder(function) if function is not None else self._no_reply_left
        )
        return self

    @property
    def pending(self) -> int:
        """Queued replies not used yet."""
        return self._replies.pending

    # -- inspecting --------------------------------------------------------------------------

    @property
    def requests(self) -> list[ModelCall]:
        """Every request received, in order (retries included)."""
        return [self._call(seen, index) for index, seen in enumerate(self._replies.requests)]

    @property
    def last_request(self) -> ModelCall:
        """The latest request received.

        Raises:
            LookupError: when no request was made yet.
        """
        __tracebackhide__ = True
        seen = self._replies.requests
        if not seen:
            raise LookupError("the scripted model has received no request yet")
        return self._call(seen[-1], len(seen) - 1)

    def request(self, step: int, *, run: RunResult | str | None = None) -> ModelCall:
        """The request made on ``step`` (counted from 1, as in run events) of a run.

        Args:
            step: the step number.
            run: a :class:`~oracle_core.RunResult` or run id; default: the latest run that
                called the model.

        Raises:
            LookupError: naming the steps that run did make.
        """
        __tracebackhide__ = True
        calls = [c for c in self.requests if c.run_id is not None]
        if not calls:
            raise LookupError("the scripted model has received no request from a run yet")
        run_id = calls[-1].run_id if run is None else run if isinstance(run, str) else run.run_id
        of_run = [c for c in calls if c.run_id == run_id]
        matching = [c for c in of_run if c.step == step]
        if not matching:
            steps = sorted({c.step for c in of_run if c.step is not None})
            made = f"{len(steps)} model call(s) (step {', '.join(map(str, steps))})"
            raise LookupError(f"run {run_id} made {made}; there is no step {step}")
        return matching[-1]

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Release what the model holds (nothing, unless it runs a server)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {len(self._replies.requests)} request(s) received, "
            f"{self.pending} reply(ies) queued>"
        )

    # -- internals ---------------------------------------------------------------------------

    def _tag(self, request: ModelRequest) -> str:
        """A fresh :data:`CALL_HEADER` value that remembers the run and step of ``request``."""
        tag = uuid.uuid4().hex
        with self._lock:
            self._made[tag] = (request.step, request.run_id, request.thread_id)
        return tag

    def _call(self, seen: SeenRequest, index: int) -> ModelCall:
        with self._lock:
            made = self._made.get(seen.headers.get(CALL_HEADER, ""))
        step, run_id, thread_id = made if made is not None else (None, None, None)
        return ModelCall(seen.body, seen.headers, index, step, run_id, thread_id)

    def _responder(self, function: ReplyFunction) -> Callable[[SeenRequest], Reply]:
        def answer(seen: SeenRequest) -> Reply:
            reply = function(self._call(seen, self._replies.index(seen)))
            return Reply.text(reply) if isinstance(reply, str) else reply

        answer.__name__ = getattr(function, "__name__", "reply function")
        return answer

    def _no_reply_left(self, seen: SeenRequest) -> Reply:
        call = self._call(seen, self._replies.index(seen))
        return Reply.error(
            400,
            f"the scripted model has no reply queued for {call.describe()} (request "
            f"#{call.index + 1}): queue one with reply_text(), reply_tool_call() or "
            "reply_with(), or answer every request with respond_with()",
        )


class ScriptedModel(ScriptedModelBase):
    """A scripted model that answers in the test process: no litellm, no HTTP, no server.

    Each call is recorded as the OpenAI chat completions request the HTTP path would have
    sent (same ``body``; ``headers`` hold only what the oracle adds), answered from the
    script, and returned (or streamed, in pieces) as a provider's answer would be. A
    scripted error raises :class:`~oracle_core.models.base.ModelError`, as a failing
    provider does. The ``oracle_model`` pytest fixture makes one per test; use
    ``HTTPScriptedModel`` (fixture ``oracle_http_model``) to test the litellm path itself.

    Args:
        name: the model name, sent as the request body's ``model``.
        options: request options the body carries (``temperature=0``, ...); client options
            such as ``num_retries`` or ``timeout`` are accepted and left out of the body.
    """

    def __init__(self, name: str = "scripted-model", **options: Any) -> None:
        super().__init__(ReplyQueue())
        self.name = name
        self.options = options

    def body(self, request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
        """The OpenAI chat completions body sent for ``request``, as JSON would carry it."""
        options = {**self.options, **request.options}
        extra_body = options.pop("extra_body", None) or {}
        limit_output(options)  # as both client paths do (ProviderModel.settings)
        body: dict[str, Any] = {
            # litellm sends the model without its provider prefix ("openai/..."), and leaves
            # out what is None; an assistant message that only calls tools carries
            # ``"content": ""``, as both client paths send it (wire_messages).
            "model": (request.model or self.name).split("/", 1)[-1],
            "messages": [_without_none(message) for message in wire_messages(request)],
            **_without_none(
                {key: value for key, value in options.items() if key not in CLIENT_OPTIONS}
            ),
            **extra_body,
        }
        if request.tools:
            body["tools"] = request.openai_tools()
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})
        # A JSON round trip, as over the wire: plain lists and dicts, nothing shared with
        # the live request.
        recorded: dict[str, Any] = json.loads(json.dumps(body))
        return recorded

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` from the script."""
        seen, reply = await self._answer(request, stream=False)
        message = assistant_message(reply.content, reply.openai_tool_calls())
        return ModelResponse(message, reply.usage_for(seen), calls=calls_of(message))

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        """Answer ``request`` from the script: its text in pieces, then the whole response."""
        seen, reply = await self._answer(request, stream=True)
        for piece in reply.text_pieces():
            yield piece
        message = assistant_message(reply.content or None, reply.openai_tool_calls())
        yield ModelResponse(message, reply.usage_for(seen), calls=calls_of(message))

    async def _answer(self, request: ModelRequest, *, stream: bool) -> tuple[SeenRequest, Reply]:
        headers = _headers(self.options.get("extra_headers"), request.options.get("extra_headers"))
        seen = SeenRequest(
            self.body(request, stream=stream), {**headers, CALL_HEADER: self._tag(request)}
        )
        reply = self._replies.answer(seen)
        if reply.exchange is not None:
            raise TypeError(
                "a replayed HTTP exchange (Reply.replay) needs the HTTP server: use "
                "HTTPScriptedModel (the oracle_http_model fixture) or FakeOpenAI"
            )
        if reply.hold is not None:
            await asyncio.to_thread(reply.hold.wait, 30)
        if reply.failed:
            raise ModelError(
                f"model call to {request.model or self.name!r} failed (HTTP {reply.status}): "
                f"{reply.content or 'error'}"
            )
        return seen, reply


def _headers(*extra: Mapping[str, Any] | None) -> dict[str, str]:
    """The headers the oracle adds to a request (``extra_headers``), names in lower case."""
    headers = {"content-type": "application/json"}
    for more in extra:
        headers.update({str(name).lower(): str(value) for name, value in (more or {}).items()})
    return headers


def _without_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}
