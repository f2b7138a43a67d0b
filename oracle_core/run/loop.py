"""The run loop: one user message worked to an answer on one thread.

Each step asks the model (through the middleware chain, with the gate's tool list), saves
the assistant message, runs the tool calls (concurrently, bounded, results in call order),
saves their results and any capability loads, and repeats until the model answers without
tool calls or the step limit is reached. State is saved after every step.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from oracle_core.capabilities.meta_tools import (
    LIST_CAPABILITIES,
    LOAD_CAPABILITY,
    list_capabilities,
    load_capability,
)
from oracle_core.context import ToolContext
from oracle_core.errors import OracleError, ToolArgumentsError, ToolError
from oracle_core.run.events import (
    CapabilityLoaded,
    Event,
    ModelCallStarted,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from oracle_core.run.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolResult,
    Usage,
)
from oracle_core.run.middleware import Middleware
from oracle_core.store.state import RunRecord

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle

log = logging.getLogger("oracle_core.run.loop")


class MiddlewareError(OracleError):
    """A plugin's middleware raised; the message names the plugin."""

    def __init__(self, middleware: Middleware, method: str, error: BaseException) -> None:
        super().__init__(
            f"middleware {type(middleware).__name__} of plugin {middleware.plugin!r} raised in "
            f"{method}: {type(error).__name__}: {error}"
        )
        self.plugin = middleware.plugin


@dataclass
class RunResult:
    """What a finished run produced.

    Attributes:
        run_id: the run's id.
        thread_id: its thread.
        status: ``completed``, ``failed`` or ``cancelled``.
        answer: the final answer text (empty unless completed).
        usage: provider-reported tokens over the run.
        error: why it failed, when it did.
        events: every event, in order (model calls, tool calls and results, loads, usage).
    """

    run_id: str
    thread_id: str
    status: str
    answer: str
    usage: Usage
    error: str | None = None
    events: list[Event] = field(default_factory=list)

    @classmethod
    def from_events(cls, thread_id: str, events: list[Event]) -> RunResult:
        """The result of a run from its complete list of events (ending with ``done``).

        Raises:
            ValueError: when ``events`` does not end with a :class:`RunFinished` event.
        """
        done = events[-1] if events else None
        if not isinstance(done, RunFinished):
            raise ValueError("the run has not finished: its events do not end with `done`")
        return cls(
            done.run_id, thread_id, done.status, done.answer, done.usage, done.error, list(events)
        )

    @property
    def tool_calls(self) -> list[ToolCallEvent]:
        """The tool calls the model made, in order."""
        return [e for e in self.events if isinstance(e, ToolCallEvent)]

    @property
    def loaded(self) -> list[str]:
        """Plugins this run loaded into the thread."""
        return [n for e in self.events if isinstance(e, CapabilityLoaded) for n in e.names]

    def to_json(self) -> dict[str, Any]:
        """The whole run as JSON-ready data."""
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "status": self.status,
            "answer": self.answer,
            "usage": self.usage.as_dict(),
            "error": self.error,
            "loaded": self.loaded,
            "events": [e.to_json() for e in self.events],
        }


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _error(call: ToolCall, message: str) -> ToolResult:
    return ToolResult(
        call.id, call.name, json.dumps({"error": message}, ensure_ascii=False), is_error=True
    )


_INNER = "_oracle_raised_further_in"


def _mark_inner(error: BaseException) -> None:
    """Mark ``error`` as raised further in, so an outer middleware is not blamed for it."""
    with contextlib.suppress(AttributeError):  # a type that forbids attributes: best effort
        setattr(error, _INNER, True)


async def _guard(middleware: Middleware, method: str, call: Awaitable[Any]) -> Any:
    """Await a middleware method; an error it raised itself is blamed on its plugin.

    Errors that came out of ``call_next`` (the model, the tool, inner middleware) pass
    through unchanged, so a middleware may catch them as they are (e.g. retry a
    ``ModelError``) and no layer is blamed for another's failure.
    """
    try:
        return await call
    except MiddlewareError:
        raise
    except Exception as error:
        if getattr(error, _INNER, False):
            raise
        raise MiddlewareError(middleware, method, error) from error


def _chain(
    middleware: list[Middleware], method: str, inner: Callable[[Any], Awaitable[Any]]
) -> Callable[[Any], Awaitable[Any]]:
    """Nest ``inner`` in each middleware's ``method``; the first middleware is outermost."""
    handler: Callable[[Any], Awaitable[Any]] = inner
    for item in reversed(middleware):

        async def call_next(value: Any, handler: Callable[[Any], Awaitable[Any]] = handler) -> Any:
            try:
                return await handler(value)
            except Exception as error:
                _mark_inner(error)
                raise

        def layer(
            value: Any, item: Middleware = item, call_next: Any = call_next
        ) -> Awaitable[Any]:
            return _guard(item, method, getattr(item, method)(value, call_next))

        handler = layer
    return handler


class Run:
    """Works one user message to an answer; iterate :meth:`events` to drive it."""

    def __init__(
        self, oracle: Oracle, thread_id: str, message: str, *, user_id: str, stream: bool
    ) -> None:
        self.oracle = oracle
        self.thread_id = thread_id
        self.message = message
        self.user_id = user_id
        self.stream = stream
        self.record = RunRecord(id=f"run_{uuid.uuid4().hex[:16]}", thread_id=thread_id)
        self.messages: list[Message] = []
        self.loaded: list[str] = []
        self.answer = ""

    async def _save(self, messages: list[Message], loaded: Sequence[str] = ()) -> None:
        self.loaded = await self.oracle.checkpointer.append(
            self.thread_id,
            base=len(self.messages),
            messages=messages,
            loaded=loaded,
            run=self.record,
        )
        self.messages.extend(messages)

    async def events(self) -> AsyncIterator[Event]:
        """Run to the end, yielding events; state is saved after every step."""
        oracle = self.oracle
        await oracle.start()
        async with oracle.thread_lock(self.thread_id):
            state = await oracle.checkpointer.load(self.thread_id)
            self.messages, self.loaded = state.messages, state.loaded_plugins
            opening = [*self._interrupted_results(), {"role": "user", "content": self.message}]
            await self._save(opening)
            try:
                yield RunStarted(self.record.id, self.thread_id)
                async for event in self._steps():
                    yield event
            except (asyncio.CancelledError, GeneratorExit):
                self.record.status = "cancelled"
                await asyncio.shield(self._save([]))
                raise
            except Exception as error:
                if not isinstance(error, OracleError):
                    log.exception("run %s failed", self.record.id)
                self.record.status = "failed"
                self.record.error = str(error)
                await self._save([])
            yield RunFinished(
                self.record.id,
                self.record.status,
                self.answer,
                self.record.usage,
                self.record.error,
            )

    def _interrupted_results(self) -> list[Message]:
        """Tool results for calls a crashed run left unanswered, so the thread stays valid."""
        answered: set[str] = set()
        for message in reversed(self.messages):
            if message.get("role") == "tool":
                answered.add(str(message.get("tool_call_id")))
                continue
            pending = [c for c in message.get("tool_calls") or [] if c["id"] not in answered]
            error = json.dumps({"error": "not run: the run that asked for it was interrupted"})
            return [{"role": "tool", "tool_call_id": c["id"], "content": error} for c in pending]
        return []

    async def _steps(self) -> AsyncIterator[Event]:
        oracle = self.oracle
        for step in range(1, oracle.max_steps + 1):
            request = oracle.build_request(
                self.thread_id, self.record.id, step, self.messages, self.loaded, self.user_id
            )
            yield ModelCallStarted(
                step, [t.name for t in request.tools], oracle.token_split(request)
            )
            response: ModelResponse | None = None
            async for item in self._model_call(request):
                if isinstance(item, ModelResponse):
                    response = item
                else:
                    yield item
            assert response is not None
            self.record.steps = step
            self.record.usage = self.record.usage + response.usage
            assistant = dict(response.message)
            calls = response.tool_calls
            if calls:
                assistant["_offered"] = [t.name for t in request.tools]
            else:
                self.answer = str(assistant.get("content") or "")
                self.record.status = "completed"
            await self._save([assistant])
            yield UsageEvent(step, response.usage)
            if not calls:
                return
            for call in calls:
                yield ToolCallEvent(
                    call["id"], call["function"]["name"], call["function"].get("arguments") or ""
                )
            offered = frozenset(assistant["_offered"])
            results = await self._run_tools(calls, offered)
            loads = [name for r in results for name in r.loaded]
            await self._save([r.message() for r in results], loads)
            for result in results:
                yield ToolResultEvent(
                    result.call_id, result.name, result.content, result.is_error, result.refused
                )
            if loads:
                yield CapabilityLoaded(loads)
        raise OracleError(
            f"the run stopped after {oracle.max_steps} model calls without a final answer "
            "(the step limit; raise it with Oracle(max_steps=...))"
        )

    async def _model_call(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelResponse]:
        chain = self.oracle.middleware
        queue: asyncio.Queue[TextDelta] = asyncio.Queue()

        async def call_model(req: ModelRequest) -> ModelResponse:
            model = self.oracle.model
            if not self.stream:
                return await model.complete(req)
            final: ModelResponse | None = None
            async for piece in model.stream(req):
                if isinstance(piece, ModelResponse):
                    final = piece
                else:
                    queue.put_nowait(TextDelta(piece))
            assert final is not None
            return final

        async def whole() -> ModelResponse:
            for item in chain:
                await _guard(item, "before_model_call", item.before_model_call(request))
            try:
                response: ModelResponse = await _chain(chain, "wrap_model_call", call_model)(
                    request
                )
            except Exception as error:
                await self._notify(error, request)
                raise
            for item in reversed(chain):
                await _guard(item, "after_model_call", item.after_model_call(request, response))
            return response

        task = asyncio.ensure_future(whole())
        try:
            while not task.done():
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
            while not queue.empty():
                yield queue.get_nowait()
            yield task.result()
        finally:
            if not task.done():
                task.cancel()

    async def _notify(self, error: BaseException, where: ModelRequest | ToolCall) -> None:
        for item in self.oracle.middleware:
            try:
                await item.on_error(error, where)
            except Exception:
                log.exception("on_error of middleware of plugin %r raised", item.plugin)

    async def _run_tools(
        self, calls: list[dict[str, Any]], offered: frozenset[str]
    ) -> list[ToolResult]:
        semaphore = asyncio.Semaphore(self.oracle.tool_concurrency)
        loaded = list(self.loaded)
        handler = _chain(
            self.oracle.middleware, "wrap_tool_call", partial(self._execute, loaded, semaphore)
        )

        async def one(raw: dict[str, Any]) -> ToolResult:
            call = ToolCall(
                id=raw["id"], name=raw["function"]["name"], arguments=raw["function"].get("arguments") or "",
                offered=offered, thread_id=self.thread_id, run_id=self.record.id, loaded=tuple(loaded),
                user_id=self.user_id,
            )  # fmt: skip
            chain = self.oracle.middleware
            for item in chain:
                await _guard(item, "before_tool_call", item.before_tool_call(call))
            result: ToolResult = await handler(call)
            for item in reversed(chain):
                await _guard(item, "after_tool_call", item.after_tool_call(call, result))
            return result

        return list(await asyncio.gather(*(one(c) for c in calls)))

    async def _execute(
        self, loaded: list[str], semaphore: asyncio.Semaphore, call: ToolCall
    ) -> ToolResult:
        registry = self.oracle.registry
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError as error:
            return _error(
                call,
                f"the arguments of {call.name} are not valid JSON ({error}); send a JSON object",
            )
        if not isinstance(arguments, dict):
            return _error(
                call,
                f"the arguments of {call.name} must be a JSON object, not {type(arguments).__name__}",
            )
        if call.name == LIST_CAPABILITIES:
            return ToolResult(call.id, call.name, list_capabilities(registry, loaded))
        if call.name == LOAD_CAPABILITY:
            outcome = load_capability(registry, loaded, arguments)
            loaded.extend(outcome.loaded)  # a second load in the same response sees the first
            return ToolResult(
                call.id, call.name, outcome.content, is_error=outcome.error, loaded=outcome.loaded
            )
        bound = registry.tools.get(call.name)
        if bound is None:
            return _error(call, f"tool {call.name!r} does not exist")
        context = ToolContext(
            thread_id=self.thread_id, run_id=self.record.id, plugin=bound.plugin.name,
            config=bound.plugin.config, user_id=self.user_id, oracle=self.oracle,
        )  # fmt: skip
        timeout = bound.tool.timeout or self.oracle.tool_timeout
        async with semaphore:
            try:
                value = await asyncio.wait_for(bound.tool.call(arguments, context), timeout)
            except (ToolArgumentsError, ToolError) as error:
                return _error(call, str(error))
            except TimeoutError:
                return _error(call, f"{call.name} timed out after {timeout:g} s")
            except Exception as error:
                log.exception("tool %s of plugin %s raised", call.name, bound.plugin.name)
                await self._notify(error, call)
                return _error(call, f"{call.name} failed: {type(error).__name__}: {error}")
        return ToolResult(call.id, call.name, _content(value))
