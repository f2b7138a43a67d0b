"""A final answer past a bound of structured output fails the run at once, named, without
a repair turn, and the event loop goes on meanwhile (issue 38, hole 1): answers too long or
nested too deep are refused before they are checked; a check that runs out of time stops.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

from output_cases import recursive_case
from waits_support import FunctionModel, build_oracle, text

from oracle_core import ModelRequest, ModelResponse
from oracle_core.errors import OutputLimitError
from oracle_core.run.output import MAX_ANSWER_CHARS, MAX_ANSWER_DEPTH, check_answer
from oracle_core.values.output import OutputSchema


def _nested(rng: random.Random, depth: int) -> Any:
    value: Any = rng.choice([1, "x", None])
    for _ in range(depth):
        value = [value] if rng.random() < 0.5 else {"k": value}
    return value


def test_answers_nested_past_the_bound_are_refused_before_the_check() -> None:
    rng = random.Random(3831)
    output = OutputSchema.from_schema({"type": ["object", "array"]})
    depths = [MAX_ANSWER_DEPTH + 1 + rng.randrange(200) for _ in range(40)] + [50_000]
    for depth in depths:
        answer = json.dumps(_nested(rng, depth)) if depth < 900 else "[" * depth + "]" * depth
        try:
            check_answer(output, answer)
        except OutputLimitError as error:
            assert f"nests arrays and objects more than {MAX_ANSWER_DEPTH} deep" in str(error)
        else:
            raise AssertionError(f"an answer {depth} deep was checked")


def test_answers_at_the_depth_bound_are_checked() -> None:
    rng = random.Random(3832)
    output = OutputSchema.from_schema({"type": ["object", "array"]})
    for _ in range(40):
        checked = check_answer(output, json.dumps(_nested(rng, MAX_ANSWER_DEPTH - 1)))
        assert checked.problem is None


def test_answers_longer_than_the_bound_are_refused_naming_their_length() -> None:
    rng = random.Random(3833)
    output = OutputSchema.from_schema({"type": "object"})
    for _ in range(5):
        size = MAX_ANSWER_CHARS + 1 + rng.randrange(2_000_000)
        answer = '{"a": "' + "x" * (size - 9) + '"}'
        try:
            check_answer(output, answer)
        except OutputLimitError as error:
            assert f"more than the {MAX_ANSWER_CHARS:,} a structured answer may be" in str(error)
        else:
            raise AssertionError("a long answer was checked")


async def test_a_run_whose_check_runs_out_of_time_fails_named_and_the_loop_goes_on(
    db: Path,
) -> None:
    rng = random.Random(3834)
    schema, answer = recursive_case(rng)
    asked: list[ModelRequest] = []

    def model(request: ModelRequest) -> ModelResponse:
        asked.append(request)
        return text(json.dumps(answer))

    gaps: list[float] = []

    async def ticker() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    async with build_oracle(db, model=FunctionModel(model)) as oracle:
        ticking = asyncio.create_task(ticker())
        try:
            result = await oracle.run("t", "answer", output_type=schema)
        finally:
            ticking.cancel()
        thread = await oracle.checkpointer.load("t")

    assert result.status == "failed"
    assert "was not checked: the check went past 5 s; ask for a smaller answer" in str(result.error)
    assert len(asked) == 1  # no repair turn
    assert thread.messages[-1]["content"] == json.dumps(answer)  # the answer is saved
    assert len(gaps) > 50 and max(gaps) < 1.0  # the loop was never held
