"""The final answer checked against the output the caller wants (structured output).

A run with an output (:attr:`RunOptions.output <oracle_core.RunOptions>`) completes only
with an answer that is JSON valid for its schema. A model often wraps JSON in a Markdown
fence: the fence is taken off. A wrong answer gets one repair turn: it is saved, with a user
message saying exactly what is wrong and asking for the JSON alone, and the model is asked
again. A repaired answer that is still wrong is saved too, and the run fails with
:class:`~oracle_core.OutputValidationError`; the thread takes a next message as ever.

The check runs in a worker thread, bounded: an answer longer than
:data:`MAX_ANSWER_CHARS` or nested deeper than :data:`MAX_ANSWER_DEPTH`, or whose check
goes past its time and work (``values/output_validator.py``), fails the run at once with
:class:`~oracle_core.errors.OutputLimitError`, so no answer and no schema can stall the
event loop or grow the process without end.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any

from oracle_core.errors import OutputLimitError, OutputValidationError
from oracle_core.run.deps import RunDeps
from oracle_core.run.saving import save
from oracle_core.run.state import RunState
from oracle_core.values.messages import Message
from oracle_core.values.output import OutputSchema

_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\n(?P<body>.*?)\n?[ \t]*```\s*\Z", re.DOTALL)
_MAX_PROBLEM = 500  # characters of a problem told to the model: an echoed value can be long

MAX_ANSWER_CHARS = 1_000_000
"""Characters of a final answer checked against an output schema."""

MAX_ANSWER_DEPTH = 32
"""Arrays and objects nested in a final answer checked against an output schema."""


@dataclass(frozen=True)
class CheckedAnswer:
    """An answer read against an output.

    Attributes:
        text: the answer's JSON text (without a fence the model put around it).
        value: the parsed JSON (``None`` when it does not parse).
        problem: what is wrong, in one sentence, or ``None`` when it is valid.
    """

    text: str
    value: Any
    problem: str | None


def check_answer(output: OutputSchema, answer: str) -> CheckedAnswer:
    """Read ``answer`` as JSON valid for ``output``; says what is wrong when it is not.

    Bounded, not quick: call it from a worker thread (:func:`final_answer` does).

    Raises:
        OutputLimitError: the answer is past a bound, or its check went past one.
    """
    if len(answer) > MAX_ANSWER_CHARS:
        raise OutputLimitError(
            schema=output.name,
            problem=f"the answer is {len(answer):,} characters, more than the "
            f"{MAX_ANSWER_CHARS:,} a structured answer may be",
        )
    fenced = _FENCE.match(answer)
    text = (fenced.group("body") if fenced else answer).strip()
    try:
        value = json.loads(text)
    except RecursionError:
        value, depth = None, MAX_ANSWER_DEPTH + 1
    except ValueError as error:
        return CheckedAnswer(text, None, f"it is not JSON ({error})")
    else:
        depth = _depth(value)
    if depth > MAX_ANSWER_DEPTH:
        raise OutputLimitError(
            schema=output.name,
            problem=f"the answer nests arrays and objects more than {MAX_ANSWER_DEPTH} deep",
        )
    return CheckedAnswer(text, value, _problem(output, value))


def _depth(value: Any) -> int:
    """How deep ``value`` nests arrays and objects (counted without recursion; stops past
    the bound)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, list | dict):
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_ANSWER_DEPTH:
            break
        stack.extend(
            (child, depth + 1) for child in (node.values() if isinstance(node, dict) else node)
        )
    return deepest


def _problem(output: OutputSchema, value: Any) -> str | None:
    from oracle_core.values.output_validator import CheckBoundError, answer_problem

    try:
        problem = answer_problem(output.schema, value)
    except CheckBoundError as bound:
        raise OutputLimitError(schema=output.name, problem=bound.limit) from None
    if problem is not None:
        return _short(problem)
    if output.model is not None:  # its own validators may refuse what the schema allows
        from pydantic import ValidationError

        try:
            output.model.model_validate(value)
        except ValidationError as invalid:
            first = invalid.errors()[0]
            where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
            return _short(f"at {where}: {first['msg']}")
    return None


def _short(problem: str) -> str:
    return problem if len(problem) <= _MAX_PROBLEM else problem[: _MAX_PROBLEM - 3] + "..."


def repair_request(output: OutputSchema, problem: str) -> Message:
    """The user message of a repair turn: what is wrong, and to reply with the JSON alone."""
    wanted = (
        "a JSON object"
        if output.any_object
        else f"JSON valid for this schema:\n{json.dumps(dict(output.schema), ensure_ascii=False)}"
    )
    return {
        "role": "user",
        "content": f"Your answer is not valid for the output schema {output.name!r}: {problem}. "
        f"Reply with only the JSON, no other text and no code fence: {wanted}",
    }


async def final_answer(deps: RunDeps, state: RunState, assistant: Message) -> bool:
    """Save the model's answer; whether it ends the run (``False``: ask the model again).

    Without an output the answer is the final one. With one, only a valid answer is final
    (its JSON text, without a fence, becomes the run's answer); a wrong one is saved with a
    repair request, once.

    Raises:
        OutputValidationError: the answer after the repair turn is still wrong (it is saved).
        OutputLimitError: the answer or its check went past a bound (it is saved).
    """
    content = str(assistant.get("content") or "")
    output = state.options.output
    checked = None
    if output is not None:
        try:  # in a worker thread: a check is bounded, not quick, and the loop serves all
            checked = await asyncio.to_thread(check_answer, output, content)
        except OutputLimitError:
            await save(deps, state, [assistant])  # nothing the model said is lost
            raise
    if output is None or checked is None or checked.problem is None:
        state.answer = content if checked is None else checked.text
        state.record.status = "completed"
        await save(deps, state, [assistant])
        return True
    if state.output_repairs >= 1:
        await save(deps, state, [assistant])  # nothing the model said is lost
        raise OutputValidationError(schema=output.name, problem=checked.problem)
    state.output_repairs += 1
    await save(deps, state, [assistant, repair_request(output, checked.problem)])
    return False


def output_value(state: RunState) -> Any:
    """The parsed JSON of a completed run with an output (its answer, already checked)."""
    if state.options.output is None or state.record.status != "completed":
        return None
    try:
        return json.loads(state.answer)
    except ValueError:  # never: it was checked; but the run's last event must always come
        return None
