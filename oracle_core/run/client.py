"""Continuing a run with the results of the caller's own tools.

A run whose model called a client tool (:class:`~oracle_core.ClientTool`) stops as
``waiting_for_client``, the calls unanswered in the thread. The caller runs them and
continues with their results: a run whose first step is :class:`ToolResultsStep`, which
saves one tool message per call and goes on to the model. The results must answer exactly
the calls left open (a result for a call the run never made, or a call left without one,
is refused before anything is saved); the run that waited is the run that goes on (its id,
steps and usage), or, on a thread no run of this store waited on (a stateless caller that
brings the whole history), a new one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from oracle_core.authoring.tools.tool import TOOL_NAME_PATTERN
from oracle_core.errors import ClientToolError, ThreadWaitingError, ToolResultsError
from oracle_core.models.wire import calls_of
from oracle_core.plugins.core_tools import META_TOOL_NAMES
from oracle_core.plugins.registry import BoundTool, Registry
from oracle_core.run.deps import RunDeps
from oracle_core.run.opening import unanswered_calls
from oracle_core.run.state import RunState
from oracle_core.run.turn import open_run
from oracle_core.store.facets import facet_of
from oracle_core.values.events import Event, ToolResultEvent
from oracle_core.values.messages import Message
from oracle_core.values.output_bounds import shape_problem
from oracle_core.values.run_options import ClientTool, options_from_json
from oracle_core.values.text import clean_text
from oracle_core.values.threads import RunRecord

if TYPE_CHECKING:
    from oracle_core.values.operations import Operation


def check_results(open_calls: list[str], results: Mapping[str, str]) -> None:
    """Refuse ``results`` unless they answer exactly ``open_calls``.

    Raises:
        ToolResultsError: naming the ids that answer no open call and the open calls left
            without an answer.
    """
    unknown = [i for i in results if i not in open_calls]
    missing = [i for i in open_calls if i not in results]
    if not unknown and not missing:
        return
    problems = []
    if unknown:
        problems.append(f"no open call has the id {', '.join(map(repr, unknown))}")
    if missing:
        problems.append(f"the calls {', '.join(map(repr, missing))} have no result")
    if not open_calls:
        problems.append("the thread has no open tool call: send a user message instead")
    raise ToolResultsError(
        "the tool results do not answer the run's open calls: " + "; ".join(problems)
    )


async def check_thread_results(deps: RunDeps, thread_id: str, results: Mapping[str, str]) -> None:
    """Refuse ``results`` for ``thread_id`` as it stands, before a run starts on it.

    The run's first step checks again with the thread held; this earlier look lets the
    caller get the typed error itself, with nothing run and nothing saved.

    Raises:
        ToolResultsError: when they do not answer exactly the thread's open calls.
        ThreadWaitingError: when one of them answers a call that waits for an operation
            (a person's approval, a credential): the operation settles that call, not the
            caller (answered 409 by the server).
    """
    saved = await deps.store.load(thread_id)
    answered = {str(k): v for k, v in results.items()}
    operations = facet_of(deps.store, "operations")  # a store of threads only has none
    held = await operations.list_operations(thread_id=thread_id) if operations else []
    for operation in held:
        if (
            operation.call_id in answered
            and operation.kind != "background"
            and operation.resumed_at is None
        ):
            raise ThreadWaitingError(
                _waits(operation.call_id, operation), operation_id=operation.id
            )
    check_results(unanswered_calls(list(saved.messages)), answered)


def _waits(call_id: str, operation: Operation) -> str:
    """Why a result for ``call_id`` is refused: the operation that holds the call."""
    oid = operation.id
    if operation.kind == "connection":
        what = "a credential"
        name = f"{operation.plugin}/{operation.details.get('connection', '<name>')}"
        settle = f"supply it with PUT /connections/{name} (or `oracle connections set`)"
    else:
        what = "a person's approval"
        settle = (
            f"decide it with POST /operations/{oid}/decision (or `oracle operations approve "
            f"{oid}` / `oracle operations deny {oid}`)"
        )
    return (
        f"the tool results answer the call {call_id!r}, which waits for {what} (operation "
        f"{oid}, {operation.plugin}.{operation.tool}): its result comes from that operation, "
        f"not from the caller. Send no result for it: {settle}, or cancel it with `oracle "
        f"operations cancel {oid}`; the run goes on by itself once it is settled"
    )


class ToolResultsStep:
    """The first step of a run continued with the caller's tool results.

    Args:
        results: each open call's id and the text its tool returned.
    """

    public = True  # followers see the continued run as any other

    def __init__(self, results: Mapping[str, str]) -> None:
        self.results = {str(k): clean_text(str(v)) for k, v in results.items()}

    async def open(self, deps: RunDeps, state: RunState) -> None:
        """Read the thread, check the results against its open calls, and save them.

        Raises:
            ToolResultsError: when they do not answer exactly the open calls.
            ThreadWaitingError: when a run of the thread waits for a person or a credential.
        """
        answers: list[Message] = [
            {"role": "tool", "tool_call_id": call_id, "content": text}
            for call_id, text in self.results.items()
        ]
        # The answers right after the calls, then what background work finished.
        await open_run(deps, state, lambda found: [*answers, *found.messages()], self._read)

    async def _read(self, deps: RunDeps, state: RunState) -> list[RunRecord]:
        """Read the whole thread, check the results, and take the run that waited."""
        saved = await deps.store.load(state.thread_id)
        state.read(list(saved.messages), list(saved.message_tokens), list(saved.loaded_plugins))
        check_results(unanswered_calls(state.messages), self.results)
        dead = [r for r in saved.runs if r.status == "running"]  # none holds the thread now
        last = saved.runs[-1] if saved.runs else None
        if last is not None and last.status == "waiting_for_client":
            given = state.record.options  # what this call gave, if anything
            state.record = last  # the run that waited goes on, with the options given now
            state.record.status, state.record.error = "running", None
            if given is not None:
                state.record.options = given
            else:  # or, given none, with those it had
                state.options = options_from_json(last.options)
        return dead

    async def answer(self, deps: RunDeps, state: RunState) -> AsyncIterator[Event]:
        """The results, as tool results of the run; the model goes on."""
        for call_id, text in self.results.items():
            name = _call_name(state.messages, call_id)
            yield ToolResultEvent(call_id, name, text, False, False)

    async def close(self, deps: RunDeps, state: RunState, failure: str | None) -> None:
        """Nothing to close: the run's record says how it ended."""


def _call_name(messages: list[Message], call_id: str) -> str:
    for message in reversed(messages):
        for call in calls_of(message):
            if call.id == call_id:
                return call.name
    return ""


def check_client_tools(registry: Registry, tools: Sequence[ClientTool]) -> None:
    """Refuse client tools the model could not be offered beside the oracle's own.

    Raises:
        ClientToolError: a name that is not a tool name, two tools of one name, a name of
            the oracle's (a meta-tool's, or a listed plugin tool's: both owners named; a
            silent tool's is taken, see :func:`_unlisted`), or
            parameters that are not a JSON Schema of an object.
    """
    problems: list[str] = []
    seen: set[str] = set()
    for tool in tools:
        name = tool.name
        if not isinstance(name, str) or not TOOL_NAME_PATTERN.fullmatch(name):
            problems.append(
                f"client tool {name!r}: a tool name is 1 to 64 letters, digits, '_' or '-'"
            )
            continue
        if name in seen:
            problems.append(f"client tool {name!r} is given twice")
        seen.add(name)
        if name.lower() in META_TOOL_NAMES:
            problems.append(f"client tool {name!r} has the name of the oracle's meta-tool {name!r}")
        elif (bound := registry.tools.get(name)) is not None and not _unlisted(bound):
            problems.append(
                f"client tool {name!r} has the name of the oracle's tool {name!r} of plugin "
                f"{bound.plugin.name!r}: rename yours"
            )
        problem = schema_problem(tool.parameters)
        if problem is not None:
            problems.append(f"client tool {name!r}: its parameters {problem}")
    if problems:
        raise ClientToolError("; ".join(problems))


def _unlisted(bound: BoundTool) -> bool:
    """Whether ``bound`` is a tool no listing shows (silent, or of a silent plugin).

    A client tool of its name is not refused: a refusal would tell the caller that the tool
    exists, where a made-up name is taken. It takes that tool's place in the run instead
    (:meth:`~oracle_core.run.requests.RequestBuilder.build`): the model is shown the
    client's, and its calls are handed back, as every client tool's are.
    """
    return bound.visibility == "silent" or bound.plugin.visibility == "silent"


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """What keeps ``schema`` from being a JSON Schema of tool arguments, or ``None``."""
    if not isinstance(schema, Mapping):
        return "must be a JSON object (a JSON Schema)"
    if schema.get("type", "object") != "object":
        return f"must be a schema of an object, not of {schema.get('type')!r}"
    # Bounded first: the meta-schema's check below runs where it is called (on the loop).
    if (problem := shape_problem(schema)) is not None:
        return problem.replace("is ", "are ", 1)
    try:
        import jsonschema  # the server's and MCP's dependency; without it, the shape only
    except ImportError:
        return None
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as error:
        return f"are not a valid JSON Schema: {error.message}"
    return None
