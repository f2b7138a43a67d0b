"""Beginning a run as its caller asks for it: a new message, or the client tools' results.

The :meth:`Oracle.stream <oracle_core.Oracle.stream>` facade hands its arguments here: the
caller's client tools are checked against the oracle's, results for a ``waiting_for_client``
run against the calls left open, and the run gets its first state and first step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from oracle_core.run.client import ToolResultsStep, check_client_tools, check_thread_results
from oracle_core.run.deps import RunDeps
from oracle_core.run.loop import Run
from oracle_core.run.state import RunState
from oracle_core.values.attachments import Attachment
from oracle_core.values.ids import check_thread_id, check_user_id
from oracle_core.values.run_options import RunOptions


async def begin_run(
    deps: RunDeps,
    thread_id: str,
    message: str | None,
    *,
    user_id: str,
    text_deltas: bool,
    tool_results: Mapping[str, str] | None,
    options: RunOptions,
    attachments: Sequence[Attachment] = (),
) -> Run:
    """The run of ``message`` (or of ``tool_results``) on ``thread_id``, not yet started.

    Raises:
        ClientToolError: a client tool of ``options`` is named like a tool of the oracle
            (or its name or schema is not one a model can be offered).
        ToolResultsError: ``tool_results`` do not answer exactly the open calls.
        ThreadWaitingError: a result answers a call that waits for an operation.
        InvalidThreadIdError, InvalidUserIdError: ``thread_id`` or ``user_id`` does not
            fit the rule every entry applies (:mod:`oracle_core.values.ids`).
    """
    check_thread_id(thread_id)
    check_user_id(user_id)
    check_client_tools(deps.registry, options.client_tools)
    # With an output, only the checked answer counts: a wrong one streamed as written
    # would reach the caller before its repair, so the answer comes whole, in ``done``.
    deltas = text_deltas and options.output is None
    state = RunState.new(thread_id, message or "", user_id=user_id, stream=deltas, options=options)
    state.attachments = tuple(attachments)
    first = None
    if tool_results is not None:
        await check_thread_results(deps, thread_id, tool_results)
        first = ToolResultsStep(tool_results)
    return Run(deps, state, first)
