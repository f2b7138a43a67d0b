"""A scripted model for tests: queue its replies, then inspect every request it was sent.

:class:`ScriptedModel` is a real :class:`~oracle_core.models.litellm.LiteLLMModel`: each model call
goes through ``litellm.acompletion`` over HTTP to a :class:`FakeOpenAI` server on 127.0.0.1,
so a plugin is tested on the same path as in production. Only the answers are scripted.

    with ScriptedModel() as model:
        model.reply_tool_call("load_capability", {"names": ["weather"]})
        model.reply_text("Sunny.")
        oracle = Oracle([weather], entry_points=False, model=model)
        ...
        assert "get_forecast" in model.request(2).tool_names
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from oracle_core.models.litellm import LiteLLMModel
from oracle_core.run.messages import ModelRequest, ModelResponse
from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest

if TYPE_CHECKING:
    from oracle_core.run.loop import RunResult

_CALL_HEADER = "x-oracle-test-call"

ToolCallSpec = tuple[str, "dict[str, Any] | str"]
"""A tool call to script: ``(tool name, arguments)``; arguments may be raw text (even bad JSON)."""


@dataclass
class ModelCall(SeenRequest):
    """One request the oracle sent to the scripted model, exactly as it went over the wire.

    Besides the raw request (``body``, ``messages``, ``system_prompt``, ``tools``,
    ``tool_names``) it knows which run step made it.

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


class ScriptedModel(LiteLLMModel):
    """A model whose replies a test queues, reached through litellm like any provider.

    Queue replies in the order the oracle will ask for them with :meth:`reply_text`,
    :meth:`reply_tool_call`, :meth:`reply_tool_calls`, :meth:`reply_error` and
    :meth:`reply_with`; :meth:`respond_with` answers every request left without a queued
    reply. A request with no reply fails its run with a message saying so. Afterwards,
    :attr:`requests` and :meth:`request` show what the model was sent.

    The server starts on construction; :meth:`close` (or leaving a ``with`` block) stops it.
    The ``oracle_model`` pytest fixture makes one per test.

    Args:
        name: the model name sent to the server (``openai/<name>`` for litellm).
        num_retries: litellm's retries; 0 by default, so one step makes exactly one request.
        options: more keyword arguments for ``litellm.acompletion``.
    """

    def __init__(
        self, name: str = "scripted-model", *, num_retries: int = 0, **options: Any
    ) -> None:
        self.server = FakeOpenAI().start()
        super().__init__(
            f"openai/{name}",
            api_base=self.server.url,
            api_key="sk-oracle-test",
            num_retries=num_retries,
            **options,
        )
        self._made: dict[str, tuple[int, str, str]] = {}
        self._lock = threading.Lock()
        self.server.respond_with(self._no_reply_left)

    # -- scripting ---------------------------------------------------------------------------

    def reply_text(self, text: str, *, usage: tuple[int, int] | None = None) -> ScriptedModel:
        """Queue a final text answer.

        Args:
            text: the answer.
            usage: the ``(prompt_tokens, completion_tokens)`` the provider reports.
        """
        self.server.script(replace(Reply.text(text), usage=usage))
        return self

    def reply_tool_call(
        self,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        *,
        usage: tuple[int, int] | None = None,
    ) -> ScriptedModel:
        """Queue an answer that calls one tool (``arguments`` may be raw text, even bad JSON)."""
        self.server.script(replace(Reply.call(name, arguments), usage=usage))
        return self

    def reply_tool_calls(
        self, calls: Iterable[ToolCallSpec], *, usage: tuple[int, int] | None = None
    ) -> ScriptedModel:
        """Queue one answer that calls several tools at once: ``[(name, arguments), ...]``."""
        self.server.script(replace(Reply.calls(*calls), usage=usage))
        return self

    def reply_error(self, status: int = 500, message: str = "scripted error") -> ScriptedModel:
        """Queue an HTTP error answer (the provider failing)."""
        self.server.script(Reply.error(status, message))
        return self

    def reply_with(self, function: ReplyFunction) -> ScriptedModel:
        """Queue a function that answers one request from its :class:`ModelCall`.

        It returns a :class:`Reply` (``Reply.text``, ``Reply.call``, ``Reply.calls``) or a
        string for a text answer. If it raises, the request gets HTTP 500 naming the error.
        """
        self.server.script(self._responder(function))
        return self

    def respond_with(self, function: ReplyFunction | None) -> ScriptedModel:
        """Answer every request that has no queued reply from ``function`` (``None``: stop)."""
        self.server.respond_with(
            self._responder(function) if function is not None else self._no_reply_left
        )
        return self

    @property
    def pending(self) -> int:
        """Queued replies not used yet."""
        return self.server.pending

    # -- inspecting --------------------------------------------------------------------------

    @property
    def requests(self) -> list[ModelCall]:
        """Every request received, in order (retries included)."""
        return [self._call(seen, index) for index, seen in enumerate(self.server.requests)]

    @property
    def last_request(self) -> ModelCall:
        """The latest request received.

        Raises:
            LookupError: when no request was made yet.
        """
        __tracebackhide__ = True
        seen = self.server.requests
        if not seen:
            raise LookupError("the scripted model has received no request yet")
        return self._call(seen[-1], len(seen) - 1)

    def request(self, step: int, *, run: RunResult | str | None = None) -> ModelCall:
        """The request made on ``step`` (counted from 1, as in run events) of a run.

        Args:
            step: the step number.
            run: a :class:`~oracle_core.run.loop.RunResult` or run id; default: the latest run
                that called the model.

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

    # -- the model ---------------------------------------------------------------------------

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` through litellm and the scripted server."""
        return await super().complete(self._tagged(request))

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        """Stream the answer to ``request`` through litellm and the scripted server."""
        async for piece in super().stream(self._tagged(request)):
            yield piece

    def __repr__(self) -> str:
        return (
            f"<ScriptedModel {len(self.server.requests)} request(s) received, "
            f"{self.pending} reply(ies) queued>"
        )

    def close(self) -> None:
        """Stop the server."""
        self.server.stop()

    def __enter__(self) -> ScriptedModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _tagged(self, request: ModelRequest) -> ModelRequest:
        """``request`` with a header that ties the HTTP request back to its run and step."""
        tag = uuid.uuid4().hex
        with self._lock:
            self._made[tag] = (request.step, request.run_id, request.thread_id)
        headers = {**request.options.get("extra_headers", {}), _CALL_HEADER: tag}
        return dataclasses.replace(request, options={**request.options, "extra_headers": headers})

    def _call(self, seen: SeenRequest, index: int) -> ModelCall:
        with self._lock:
            made = self._made.get(seen.headers.get(_CALL_HEADER, ""))
        step, run_id, thread_id = made if made is not None else (None, None, None)
        return ModelCall(seen.body, seen.headers, index, step, run_id, thread_id)

    def _index(self, seen: SeenRequest) -> int:
        return next(i for i, r in enumerate(self.server.requests) if r is seen)

    def _responder(self, function: ReplyFunction) -> Callable[[SeenRequest], Reply]:
        def answer(seen: SeenRequest) -> Reply:
            call = self._call(seen, self._index(seen))
            reply = function(call)
            return Reply.text(reply) if isinstance(reply, str) else reply

        answer.__name__ = getattr(function, "__name__", "reply function")
        return answer

    def _no_reply_left(self, seen: SeenRequest) -> Reply:
        call = self._call(seen, self._index(seen))
        return Reply.error(
            400,
            f"the scripted model has no reply queued for {call.describe()} (request "
            f"#{call.index + 1}): queue one with reply_text(), reply_tool_call() or "
            "reply_with(), or answer every request with respond_with()",
        )
