"""The run loop: one user message worked to an answer on one thread.

Each step asks the model (through the middleware chain, with the gate's tool list), saves
the assistant message, runs the tool calls (concurrently, bounded, results in call order),
saves their results and any capability loads, and repeats until the model answers without
tool calls or the step limit is reached. State is saved after every step.

The loop uses nothing but its :class:`~oracle_core.run.deps.RunDeps` (model, store, request
builder, tool executor, middleware chain, limits, locks, thread cache): it never sees the
oracle. It applies the capability gate itself, against the tool list that really reached
the model, before any middleware sees a call and again for a call a middleware replaced.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Any

from oracle_core.capabilities.gate import offered as offered_names
from oracle_core.errors import (
    OracleError,
    RunLimitError,
    ThreadBusyError,
    ThreadConflictError,
    ThreadWaitingError,
)
from oracle_core.run.deps import RunDeps
from oracle_core.run.executor import cap, error_result, over
from oracle_core.run.lease import ThreadLease
from oracle_core.run.opening import unanswered_calls
from oracle_core.store.base import INTERRUPTED_ERROR
from oracle_core.values.events import (
    ApprovalRequested,
    CapabilityLoaded,
    ConnectionRequested,
    Event,
    ModelCallStarted,
    OperationUpdated,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from oracle_core.values.messages import Message, ModelRequest, ModelResponse, ToolCall, ToolResult
from oracle_core.values.operations import Operation
from oracle_core.values.text import clean_json
from oracle_core.values.threads import RunRecord, RunStatus
from oracle_core.values.tokens import count_message_tokens

log = logging.getLogger("oracle_core.run")


def new_run_id() -> str:
    """A fresh run id."""
    return f"run_{uuid.uuid4().hex[:16]}"


class Run:
    """Works one user message to an answer; iterate :meth:`events` to drive it.

    Args:
        deps: everything the run uses (the loop touches nothing else).
        thread_id: the thread to work on.
        message: what the user said.
        user_id: who the run acts for.
        stream: yield the model's text as it arrives (``text_delta`` events).
    """

    def __init__(
        self,
        deps: RunDeps,
        thread_id: str,
        message: str,
        *,
        user_id: str = "default",
        stream: bool = True,
    ) -> None:
        self.deps = deps
        self.thread_id = thread_id
        self.message = message
        self.user_id = user_id
        self.stream = stream
        self.record = RunRecord(id=new_run_id(), thread_id=thread_id)
        self.messages: list[Message] = []
        self.tokens: list[int] = []
        self.message_tokens = 0
        self.loaded: list[str] = []
        self.answer = ""
        self.deadline = 0.0
        self.started = False
        self.owner = self.record.id  # who holds the thread's lease (a resume has its own)
        self.operations = False  # the thread has an operation: show get_operation
        self.waiting: list[Operation] = []  # what a waiting run waits on

    async def _save(
        self, messages: list[Message], loaded: tuple[str, ...] | list[str] = ()
    ) -> None:
        messages = [clean_json(m) for m in messages]  # what is saved is what is sent
        tokens = await _count(messages)
        self.loaded = await self.deps.store.append(
            self.thread_id,
            base=len(self.messages),
            messages=messages,
            loaded=loaded,
            run=self.record,
            lease=self.owner,
            tokens=tokens,
        )
        self.messages.extend(messages)
        self.tokens.extend(tokens)
        self.message_tokens += sum(tokens)

    async def events(self) -> AsyncGenerator[Event, None]:
        """Run to the end, yielding events; state is saved after every step.

        The last event is always :class:`RunFinished`, whatever happened: a busy thread, a
        failing store, the model, a tool, a middleware, the run's time limit.
        """
        deps = self.deps
        lease = ThreadLease(
            deps.store,
            self.thread_id,
            self.owner,
            ttl=deps.limits.lease_ttl,
            wait=deps.limits.busy_wait,
        )
        try:
            async with deps.locks(self.thread_id), lease:
                self.deadline = asyncio.get_running_loop().time() + deps.limits.run_timeout
                async for event in self._opened():
                    yield event
        except Exception as error:  # before the run began (busy, the store), or at its end
            if not isinstance(error, ThreadBusyError | ThreadConflictError | ThreadWaitingError):
                log.exception("run %s failed outside its steps", self.record.id)
            if self.record.status == "running":  # a run that finished stays finished
                self.record.status, self.record.error = "failed", str(error)
            if not self.started:
                yield RunStarted(self.record.id, self.thread_id)
        if self.messages:  # everything here was saved: a valid start of the thread
            deps.threads.put(self.thread_id, self.messages, self.tokens)
        yield RunFinished(
            self.record.id,
            self.record.status,
            self.answer,
            self.record.usage,
            self.record.error,
            [o.to_json() for o in self.waiting],
        )

    async def _opened(self) -> AsyncIterator[Event]:
        """The run from its first save on, with the thread held; ends without raising."""
        await self._open()
        try:
            self.started = True
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
            try:
                await self._save([])
            except Exception:
                log.exception("run %s: its failure could not be saved", self.record.id)

    async def _open(self) -> None:
        """Load the thread, close what a dead run left open, and save the user's message.

        A writer that appended without holding the thread (an older process, a client
        seeding a thread) only moves the base: the thread is read again, a few times.
        """
        for attempt in range(3):
            running = await self._read_thread()
            for run in running:  # this run holds the thread: any other "running" one is dead
                run.status, run.error = "interrupted", run.error or INTERRUPTED_ERROR
                await self.deps.store.append(self.thread_id, base=len(self.messages), run=run)
            found = await self.deps.open_operations(
                self.deps.store, self.thread_id, self.owner, self.messages
            )
            self.operations = found.any
            user = {"role": "user", "content": self.message}
            opening = [*self._interrupted_results(), *found.messages(), user]
            try:
                await self._save(opening)
                await found.finish(self.deps.store, self.owner)
                return
            except ThreadConflictError:
                if attempt == 2:
                    raise

    async def _read_thread(self) -> list[RunRecord]:
        """Set the thread's messages and loads, reading only what the cache lacks.

        Returns the thread's runs still marked ``running``.
        """
        store, cache = self.deps.store, self.deps.threads
        cached = cache.get(self.thread_id)
        since = len(cached.messages) if cached is not None else 0
        tail = await store.load_tail(self.thread_id, since)
        if (
            cached is not None
            and since
            and (tail.count < since or tail.before != cached.messages[-1])
        ):
            cache.drop(self.thread_id)  # deleted or replaced meanwhile: start over
            cached, tail = None, await store.load_tail(self.thread_id, 0)
        self.messages = [*(cached.messages if cached else ()), *tail.messages]
        self.tokens = [*(cached.tokens if cached else ()), *tail.message_tokens]
        self.message_tokens = sum(self.tokens)
        self.loaded = list(tail.loaded_plugins)
        return tail.running

    def _interrupted_results(self) -> list[Message]:
        """Tool results for calls a crashed run left unanswered, so the thread stays valid."""
        error = json.dumps({"error": "not run: the run that asked for it was interrupted"})
        return [
            {"role": "tool", "tool_call_id": call_id, "content": error}
            for call_id in unanswered_calls(self.messages)
        ]

    async def _steps(self) -> AsyncIterator[Event]:
        deps = self.deps
        first = self.record.steps + 1  # a resumed run goes on counting
        for step in range(first, first + deps.limits.max_steps):
            request = deps.requests.build(
                thread_id=self.thread_id,
                run_id=self.record.id,
                step=step,
                model=deps.model.name,
                messages=self.messages,
                loaded=self.loaded,
                user_id=self.user_id,
                operations=self.operations,
            )
            yield ModelCallStarted(
                step,
                list(request.tool_names),
                deps.requests.token_split(request, self.message_tokens),
            )
            outcome: tuple[ModelResponse, ModelRequest] | None = None
            async for item in self._model_call(request):
                if isinstance(item, TextDelta):
                    yield item
                else:
                    outcome = item
            assert outcome is not None
            response, sent = outcome
            self.record.steps = step
            self.record.usage = self.record.usage + response.usage
            assistant = capped_reply(response.message, deps.limits.max_text_bytes)
            calls = response.tool_calls  # as the model sent them; the executor checks sizes
            if not calls:
                self.answer = str(assistant.get("content") or "")
                self.record.status = "completed"
            await self._save([assistant])
            yield UsageEvent(step, response.usage)
            if not calls:
                return
            for call in calls:
                yield ToolCallEvent(call["id"], _name(call), _arguments(call))
            # The gate's rule, checked here against what really went to the provider.
            allowed = offered_names(request.tools, sent.tools)
            results = await self._run_tools(calls, allowed)
            async for event in self._finish_step(results):
                yield event
            if self.waiting:
                return
        raise RunLimitError(
            f"the run stopped after {deps.limits.max_steps} model calls without a final answer "
            "(the step limit; raise it with Oracle(max_steps=...))"
        )

    async def _finish_step(self, results: list[ToolResult]) -> AsyncIterator[Event]:
        """Save a step's tool results; calls that must wait become operations (not saved).

        The waits are saved first, then the other results with the run's waiting status in
        one step: a crash in between leaves a pending operation whose call is unanswered,
        which a decision resumes, and never a call that runs without one.
        """
        store = self.deps.store
        waits = [r.operation for r in results if r.operation and r.operation.status == "pending"]
        done = [r for r in results if r.operation is None or r.operation.status != "pending"]
        for operation in waits:
            await store.insert_operation(operation)
        if waits:
            self.record.status = waiting_status(waits)
            self.waiting = list(waits)
        loads = [name for r in done for name in r.loaded]
        await self._save([r.message() for r in done], loads)
        for result in done:
            yield ToolResultEvent(
                result.call_id, result.name, result.content, result.is_error, result.refused
            )
            if result.operation is not None:  # a background call started
                self.operations = True
                yield OperationUpdated(result.operation.to_json())
        if loads:
            yield CapabilityLoaded(loads)
        for operation in waits:
            self.operations = True
            yield requested(operation)

    async def _model_call(
        self, request: ModelRequest
    ) -> AsyncIterator[TextDelta | tuple[ModelResponse, ModelRequest]]:
        """Ask the model through the middleware; yields text deltas, then (response, sent)."""
        chain = self.deps.middleware
        model = self.deps.model
        queue: asyncio.Queue[TextDelta] = asyncio.Queue()
        sent: list[ModelRequest] = []

        async def call_model(req: ModelRequest) -> ModelResponse:
            sent.append(req)  # exactly what the provider is sent
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

        async def whole() -> tuple[ModelResponse, ModelRequest]:
            changed = await chain.before_model(request)
            try:
                response = await chain.wrap_model(changed, call_model)
            except Exception as error:
                await chain.notify(error, changed)
                raise
            # A middleware that answered without calling the model sent nothing: its
            # response may only call what the request it saw offered.
            shown = sent[-1] if sent else changed
            await chain.after_model(shown, response)
            return response, shown

        task = asyncio.ensure_future(whole())
        getter: asyncio.Future[TextDelta] | None = None
        try:
            while not task.done():
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait(
                    {task, getter}, timeout=self._remaining(), return_when=asyncio.FIRST_COMPLETED
                )
                if getter.done():
                    yield getter.result()
                    continue
                getter.cancel()
                if not task.done():
                    raise self._overtime("waiting for the model")
            while not queue.empty():
                yield queue.get_nowait()
            yield task.result()
        finally:
            if getter is not None and not getter.done():
                getter.cancel()  # a run cancelled while waiting must not leave it pending
            if not task.done():
                task.cancel()

    async def _run_tools(
        self, calls: list[dict[str, Any]], allowed: frozenset[str]
    ) -> list[ToolResult]:
        deps = self.deps
        chain = deps.middleware
        semaphore = asyncio.Semaphore(deps.limits.tool_concurrency)
        loaded = list(self.loaded)
        refuse_call = deps.requests.refused  # worded for the surface (catalog, specialist)

        async def execute(call: ToolCall) -> ToolResult:
            if call.name not in allowed:  # a middleware changed the call in wrap_tool_call
                return refuse_call(call, loaded)
            async with semaphore:
                return await deps.executor.execute(call, loaded, chain.notify)

        handler = chain.wrap_tool(execute)

        def refuse(seen: ToolCall) -> ToolResult | None:
            return None if seen.name in allowed else refuse_call(seen, loaded)

        async def one(raw: Mapping[str, Any]) -> ToolResult:
            call = ToolCall(
                id=str(raw["id"]),
                name=_name(raw),
                arguments=_arguments(raw),
                thread_id=self.thread_id,
                run_id=self.record.id,
                loaded=tuple(loaded),
                user_id=self.user_id,
            )
            # Decided before any middleware sees the call: a refused call stays refused.
            first = None if call.name in allowed else refuse_call(call, loaded)
            try:
                async with asyncio.timeout(self._remaining()):
                    result = await chain.run_tool(call, handler, lambda seen: first or refuse(seen))
            except TimeoutError as error:
                result = error_result(
                    call, "not finished when the run reached its time limit", error
                )
            except Exception as error:  # a middleware raised: this call fails, not its siblings
                log.error("tool call %s of run %s failed: %s", call.name, self.record.id, error)
                # The model is told no more: the details may name an internal plugin.
                result = error_result(call, "the call failed inside the oracle", error)
            # The tool message answers the model's call, whatever a middleware renamed.
            return result if result.call_id == call.id else result.replace(call_id=call.id)

        return list(await asyncio.gather(*(one(c) for c in calls)))

    def _remaining(self) -> float:
        return max(0.0, self.deadline - asyncio.get_running_loop().time())

    def _overtime(self, doing: str) -> RunLimitError:
        return RunLimitError(
            f"the run took longer than its limit of {self.deps.limits.run_timeout:g} s "
            f"({doing}); raise it with RunLimits(run_timeout=...)"
        )


def waiting_status(operations: Sequence[Operation]) -> RunStatus:
    """The status of a run that waits on ``operations`` (an approval named first)."""
    if any(o.kind == "approval" for o in operations):
        return "waiting_for_approval"
    return "waiting_for_connection"


def requested(operation: Operation) -> Event:
    """The event saying ``operation`` waits: for an approval, or for a connection."""
    kind = ApprovalRequested if operation.kind == "approval" else ConnectionRequested
    return kind(operation.to_json())


def capped_reply(message: Mapping[str, Any], limit: int) -> Message:
    """The assistant message to save: its text cut to ``limit`` bytes, oversized arguments dropped.

    Arguments are never cut (a cut would change what the call asks for); arguments over the
    limit are replaced by a note, and the executor refuses the call as too long.
    """
    assistant = dict(message)
    content = assistant.get("content")
    if isinstance(content, str):
        assistant["content"] = cap(content, limit)
    calls = []
    for call in assistant.get("tool_calls") or []:
        arguments = _arguments(call)
        if over(arguments, limit):
            dropped = json.dumps({"_dropped": f"{len(arguments)} characters of arguments"})
            call = {**call, "function": {**(call.get("function") or {}), "arguments": dropped}}
        calls.append(call)
    if calls:
        assistant["tool_calls"] = calls
    return assistant


async def _count(messages: list[Message]) -> list[int]:
    """Each message's tokens; large messages are counted off the event loop."""
    size = sum(
        len(str(m.get("content") or ""))
        + sum(len(_arguments(c)) for c in m.get("tool_calls") or [])
        for m in messages
    )
    if size < 16_384:
        return [count_message_tokens(m) for m in messages]
    return await asyncio.to_thread(lambda: [count_message_tokens(m) for m in messages])


def _name(call: Mapping[str, Any]) -> str:
    return str((call.get("function") or {}).get("name") or "")


def _arguments(call: Mapping[str, Any]) -> str:
    value = (call.get("function") or {}).get("arguments")
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)
