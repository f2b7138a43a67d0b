"""The run loop: one run worked to an answer on one thread.

A run is a loop over a :class:`~oracle_core.run.state.RunState` value and its
:class:`~oracle_core.run.deps.RunDeps`. It holds the thread (lock and lease), takes its
first step (:class:`~oracle_core.run.turn.FirstStep`: a new turn saves the user's message,
a resume answers the call that waited), then asks the model (through the middleware
chain, with the gate's tool list: :mod:`oracle_core.run.asking`), saves the assistant message, runs the tool calls
(concurrently, bounded, results in call order), saves their results and any capability
loads, and repeats until the model answers without tool calls or the step limit is
reached. State is saved after every step. The run publishes its events to the thread's
followers itself, once, as it yields them.

The loop uses nothing but its deps: it never sees the oracle, nor the waits built on it.
It applies the capability gate itself, against the tool list that really reached the
model, before any middleware sees a call and again for a call a middleware replaced.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence

from oracle_core.capabilities.gate import Shown
from oracle_core.errors import (
    OracleError,
    RunLimitError,
    ThreadBusyError,
    ThreadConflictError,
    ThreadWaitingError,
)
from oracle_core.models.base import EmptyReplyError
from oracle_core.models.retries import spent_on
from oracle_core.models.wire import call_entry, saved_reply
from oracle_core.run.asking import ask_model, remaining
from oracle_core.run.deps import RunDeps
from oracle_core.run.executor import cap, error_result, over
from oracle_core.run.gated import GatedCalls
from oracle_core.run.lease import ThreadLease
from oracle_core.run.output import final_answer, output_value
from oracle_core.run.saving import finish_step, interrupted_results, save
from oracle_core.run.state import RunState
from oracle_core.run.state import new_run_id as new_run_id  # re-exported: testing/drive.py
from oracle_core.run.turn import FirstStep, NewTurn
from oracle_core.values.events import (
    Event,
    ModelCallStarted,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallEvent,
    UsageEvent,
)
from oracle_core.values.messages import (
    Message,
    ModelResponse,
    ToolCall,
    ToolResult,
    unanswered_marker,
)

log = logging.getLogger("oracle_core.run")

GAVE_WAY = (
    "this resumption stopped: the process the run was cut off from was still writing to the "
    "thread, so the run is left to it"
)
"""The error of a run resumed after a crash that met its original process still writing."""


class Run:
    """Works one run to its end; iterate :meth:`events` to drive it.

    Args:
        deps: everything the run uses (the loop touches nothing else).
        state: where it starts from (:meth:`RunState.new` for a user's message).
        first: its first step; default a new turn (save the user's message).
    """

    def __init__(self, deps: RunDeps, state: RunState, first: FirstStep | None = None) -> None:
        self.deps = deps
        self.state = state
        self.first: FirstStep = first if first is not None else NewTurn()

    async def events(self) -> AsyncGenerator[Event, None]:
        """Run to the end, yielding events; state is saved after every step.

        The last event is always :class:`RunFinished`, whatever happened: a busy thread, a
        failing store, the model, a tool, a middleware, the run's time limit. Each event
        is handed to the oracle's observers (:mod:`oracle_core.run.observe`) and published
        to the store's channel (``checkpointer.events``) for the thread's followers, in any
        process, as it is yielded (unless the first step keeps the run to itself: a resume
        that another caller carries on). A run its caller cancels (closing the stream)
        yields nothing more, but its observers are still told it finished, as cancelled.
        """
        deps, state = self.deps, self.state
        channel = deps.store.events
        observe = deps.observers.observe
        lease = ThreadLease(
            deps.store,
            state.thread_id,
            state.owner,
            ttl=deps.limits.lease_ttl,
            wait=deps.limits.busy_wait,
        )
        try:
            async with deps.locks(state.thread_id), lease:
                state.deadline = asyncio.get_running_loop().time() + deps.limits.run_timeout
                async for event in self._opened():
                    observe(deps.registry, state, event)
                    if self.first.public:
                        channel.publish(state.thread_id, event)
                    yield event
        except (asyncio.CancelledError, GeneratorExit) as stop:  # the caller stopped reading
            finished = self._finished()
            if finished.status == "running":  # as the observers see it end here
                finished.status = HANDED_OVER if handed_over(stop) else "cancelled"
                if not handed_over(stop):
                    state.record.status = "cancelled"
            observe(deps.registry, state, finished)  # traces and metrics close
            raise
        except Exception as error:  # before the run began (busy, the store), or at its end
            if not isinstance(error, ThreadBusyError | ThreadConflictError | ThreadWaitingError):
                log.exception("run %s failed outside its steps", state.record.id)
            record = state.record  # the first step may have taken the saved record
            if record.status == "running":  # a run that finished stays finished
                record.status, record.error = "failed", str(error)
                state.error_type = type(error)
            if not state.started:
                started = RunStarted(record.id, state.thread_id)
                observe(deps.registry, state, started)
                if self.first.public:
                    channel.publish(state.thread_id, started)
                yield started
        if state.messages:  # everything here was saved: a valid start of the thread
            deps.threads.put(state.thread_id, state.messages, state.tokens)
        finished = self._finished()
        observe(deps.registry, state, finished)
        if self.first.public:
            channel.publish(state.thread_id, finished)
        yield finished

    def _finished(self) -> RunFinished:
        """The run's last event, as its record stands."""
        state = self.state
        record = state.record
        return RunFinished(
            record.id,
            record.status,
            state.answer,
            record.usage,
            record.error,
            [o.to_json() for o in state.waiting],
            list(state.client_calls),
            output=output_value(state),
            truncated=state.truncated and record.status == "completed",
        )

    async def _opened(self) -> AsyncIterator[Event]:
        """The run from its first save on, with the thread held; ends without raising."""
        deps, state = self.deps, self.state
        await self.first.open(deps, state)
        try:
            state.started = True
            yield RunStarted(state.record.id, state.thread_id)
            async for event in self._steps():
                yield event
        except (asyncio.CancelledError, GeneratorExit) as stop:
            # Handed over (a stopping server): saved as still running, so the process that
            # sweeps for cut-off runs next finishes it; otherwise a person stopped it.
            if not handed_over(stop):
                state.record.status = "cancelled"
            await asyncio.shield(save(deps, state, []))
            raise
        except Exception as error:
            if isinstance(error, ThreadConflictError) and state.steps_from is not None:
                # A run resumed after a crash met another writer: its process was alive
                # after all (stalled past its lease). The run is theirs; nothing is saved.
                log.warning("resumed run %s gave way to another writer: %s", state.record.id, error)
                state.record.status, state.record.error = "interrupted", GAVE_WAY
                return
            if not isinstance(error, OracleError):
                log.exception("run %s failed", state.record.id)
            state.record.status = "failed"
            state.record.error = str(error)
            state.error_type = type(error)
            try:
                await save(deps, state, unanswered(state, error))
            except Exception:
                log.exception("run %s: its failure could not be saved", state.record.id)

    async def _steps(self) -> AsyncIterator[Event]:
        """The first step, then the model's steps unless it ended the run."""
        deps, state = self.deps, self.state
        try:
            async for event in self.first.answer(deps, state):
                yield event
            if state.running:
                async for event in self._model_steps():
                    yield event
        except Exception as error:
            await self.first.close(deps, state, str(error))
            raise
        await self.first.close(deps, state, None)

    async def _model_steps(self) -> AsyncIterator[Event]:
        deps, state = self.deps, self.state
        record = state.record
        first = record.steps + 1  # a resumed run goes on counting
        # A run resumed after a crash counts its steps from its start (state.steps_from).
        last = (state.steps_from or first) + deps.limits.max_steps
        record.model = deps.model.name  # saved with the step's outcome, a failure's too
        shorten = functools.partial(cap, limit=deps.limits.max_text_bytes)
        too_long = functools.partial(over, limit=deps.limits.max_text_bytes)
        for step in range(first, last):
            request = deps.requests.build(
                thread_id=state.thread_id,
                run_id=record.id,
                step=step,
                model=deps.model.name,
                messages=state.messages,
                loaded=state.loaded,
                user_id=state.user_id,
                operations=state.operations,
                options=state.options,
            )
            # The names calls are decided on, frozen now, for this request alone: the gate's
            # and the caller's own tools (which it runs itself: they are handed back).
            chosen = deps.gate.names(state.loaded, operations=state.operations)
            client = state.options.client_names
            if client:
                chosen |= client
            await deps.guards.before_model(state, step)
            yield ModelCallStarted(
                step,
                list(request.tool_names),
                deps.requests.token_split(request, state.message_tokens),
            )
            outcome: tuple[ModelResponse, frozenset[str]] | None = None
            try:
                async for item in ask_model(deps, state, request):
                    if isinstance(item, TextDelta):
                        yield item
                    else:
                        outcome = item
            except OracleError as error:  # a failed call's abandoned attempts still count
                record.usage = record.usage + spent_on(error)
                raise
            assert outcome is not None
            response, sent = outcome
            record.steps = step
            record.usage = record.usage + response.usage
            await deps.guards.after_model(state, step, response.usage)
            assistant = saved_reply(response, shorten, too_long)
            calls = list(response.calls)  # as the model sent them; the executor checks sizes
            if not calls:  # the final answer, checked against a wanted output (run/output.py)
                if response.empty:
                    yield UsageEvent(step, response.usage)
                    raise EmptyReplyError(request.model or deps.model.name, response.finish_reason)
                state.truncated = response.truncated
                done = await final_answer(deps, state, assistant)
                yield UsageEvent(step, response.usage)
                if done:
                    return
                continue  # a repair turn: the model is asked again
            await save(deps, state, [assistant])
            yield UsageEvent(step, response.usage)
            for call in calls:
                yield ToolCallEvent(call.id, call.name, call.arguments)
            # The gate's rule, checked here against what really went to the provider.
            allowed = deps.gate.shown(chosen, sent)
            cut_off = frozenset(response.cut_off)  # answered here: never handed, never run
            handed = [
                c for c in calls if c.name in client and c.name in allowed and c.id not in cut_off
            ]
            if handed:  # the caller runs these: they stay unanswered in the thread
                calls = [c for c in calls if not any(c is h for h in handed)]
            await deps.guards.before_tools(state, calls)
            results, loads = await self.run_tools(calls, allowed, cut_off)
            await deps.guards.after_tools(state, results)
            async for event in finish_step(deps, state, results, loads):
                yield event
            if state.waiting:
                return
            if handed:
                state.client_calls = [call_entry(c) for c in handed]
                record.status = "waiting_for_client"
                await save(deps, state, [])
                return
        raise RunLimitError(
            f"the run stopped after {deps.limits.max_steps} model calls without a final answer "
            "(the step limit; raise it with the ORACLE_MAX_STEPS setting, or "
            "Oracle(max_steps=...) when embedding)"
        )

    async def run_tools(
        self,
        calls: Sequence[ToolCall],
        allowed: Shown,
        cut_off: frozenset[str] = frozenset(),
    ) -> tuple[list[ToolResult], tuple[str, ...]]:
        """Run one response's calls; returns their results and the plugins they loaded.

        Each call is checked against ``allowed`` and runs through the middleware, bounded by
        the run's time limit; a resumed run's first step runs calls again through it too.
        A call in ``cut_off`` (the reply ended inside its arguments) never runs: its result
        tells the model so (:data:`CUT_OFF`).
        """
        deps = self.deps
        capabilities = deps.capabilities.state(self.state.loaded)
        gated = GatedCalls(
            deps.executor, deps.middleware, allowed, capabilities, deps.limits.tool_concurrency
        )

        async def one(asked: ToolCall) -> ToolResult:
            call = asked.replace(
                thread_id=self.state.thread_id,
                run_id=self.state.record.id,
                loaded=capabilities.loaded,
                user_id=self.state.user_id,
            )
            if call.id in cut_off:
                return gated.answer(call, error_result(call, CUT_OFF))
            try:
                async with asyncio.timeout(remaining(self.state)):
                    result = await gated.run(call)
            except TimeoutError as error:
                result = error_result(
                    call, "not finished when the run reached its time limit", error
                )
            except Exception as error:  # a middleware raised: this call fails, not its siblings
                log.error(
                    "tool call %s of run %s failed: %s", call.name, self.state.record.id, error
                )
                # The model is told no more: the details may name an internal plugin.
                result = error_result(call, "the call failed inside the oracle", error)
            return gated.answer(call, result)

        results = list(await asyncio.gather(*(one(c) for c in calls)))
        return results, capabilities.new


CUT_OFF = (
    "the call was cut off before its arguments were complete (the reply reached the model's "
    "output limit, or the connection broke); nothing ran: send the call again, with shorter "
    "arguments if they were long"
)
"""What a call whose arguments the reply ended inside of answers (it never runs)."""


HANDED_OVER = "handed_over"
"""The message of a cancellation that hands the run over (``task.cancel(HANDED_OVER)``): a
stopping server's runs are saved as still ``running``, their thread's lease given back, so
another process resumes them from their last step (docs/scale-out.md); observers see them
end with this status."""


def handed_over(stop: BaseException) -> bool:
    """Whether ``stop`` is the cancellation that hands a run over (:data:`HANDED_OVER`)."""
    return isinstance(stop, asyncio.CancelledError) and stop.args[:1] == (HANDED_OVER,)


def unanswered(state: RunState, error: BaseException | None = None) -> list[Message]:
    """What a run that failed without an answer saves: a marker after its user message, so
    no model is sent that message again (``[]`` when the model answered, or no message is
    the run's own). A cancelled run keeps its message: a person stopped it, mid-question.

    A run a limit stopped (``error``, a :class:`RunLimitError`) answers the calls it left
    open, each saying why it did not run; stopped after a model call whose response it did
    not keep (a usage limit), it closes its turn with the marker all the same. So does a run
    whose model replied with nothing (:class:`EmptyReplyError`): there is no answer to keep."""
    if isinstance(error, RunLimitError):
        if results := interrupted_results(state.messages, str(error)):
            return results
    elif state.record.steps and not isinstance(error, EmptyReplyError):
        return []
    if not state.messages or state.messages[-1].get("role") != "user":
        return []
    return [unanswered_marker(state.record.id)]
