"""An answer is checked against an output schema within a bound of time and work: the
classes of schema and answer that ran for minutes and gigabytes stop, named, within the
bound; the check agrees with jsonschema everywhere else; and no reference is ever
resolved outside the schema (issue 38, holes 1 and 2)."""

from __future__ import annotations

import random
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import validators
from output_cases import (
    EVIL_PATTERNS,
    PLANTED,
    CountingServer,
    pattern_case,
    recursive_case,
    remote_refs,
)

from oracle_core.values.output_validator import CheckBoundError, answer_problem

SECONDS = 0.3
NOT_STALLED = SECONDS + 3.0  # generous: proves the check stopped, not how fast


def bounded(schema: dict[str, Any], value: Any) -> tuple[str | None, float, int]:
    """The check's outcome (a problem, ``None`` or the bound it hit), its seconds, and the
    peak of memory it allocated."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        outcome = answer_problem(schema, value, seconds=SECONDS)
    except CheckBoundError as bound:
        outcome = f"bound: {bound.limit}"
    took = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return outcome, took, peak


def test_recursive_definitions_with_nested_answers_stop_within_the_bound() -> None:
    rng = random.Random(3811)
    stopped = 0
    for _ in range(30):
        schema, answer = recursive_case(rng)
        outcome, took, peak = bounded(schema, answer)
        assert took < NOT_STALLED, (schema, took)
        assert peak < 64 * 2**20, (schema, peak)  # it grew to gigabytes
        assert outcome is not None  # no branch fits the answer's bottom
        stopped += outcome.startswith("bound: the check went past 0.3 s")
    assert stopped >= 20  # most are exponential: the bound, not luck, ended them


def test_backtracking_patterns_stop_within_the_bound() -> None:
    rng = random.Random(3812)
    for _ in range(60):
        schema, answer = pattern_case(rng)
        outcome, took, _ = bounded(schema, answer)
        assert took < NOT_STALLED, (schema, answer, took)
        assert outcome is not None, (schema, answer)  # no attack string fits


def test_the_check_gives_way_to_other_threads_while_it_backtracks() -> None:
    import threading

    gaps: list[float] = []
    done = threading.Event()

    def ticker() -> None:
        last = time.monotonic()
        while not done.is_set():
            time.sleep(0.005)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        with pytest.raises(CheckBoundError):
            answer_problem({"pattern": r"^(a|a)*$"}, "a" * 40 + "!", seconds=1.0)
    finally:
        done.set()
        thread.join()
    assert len(gaps) > 20 and max(gaps) < 0.5  # with re, one gap was the whole match


def _random_schema(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    kinds = ["type", "enum", "pattern", "unique", "props", "anyOf", "oneOf", "items"]
    kind = rng.choice(kinds if depth < 3 else kinds[:4])
    if kind == "type":
        return {"type": rng.choice(["string", "integer", "number", "boolean", "null", "array"])}
    if kind == "enum":
        return {"enum": rng.sample([1, 1.0, True, "a", None, [1], {"a": 1}], 3)}
    if kind == "pattern":
        return {"pattern": rng.choice(["^a", "b$", "[0-9]+", "^$", "a|b"])}
    if kind == "unique":
        return {"uniqueItems": True}
    if kind == "props":
        return {
            "properties": {"a": _random_schema(rng, depth + 1)},
            "patternProperties": {rng.choice(["^b", "x", "[0-9]"]): _random_schema(rng, depth + 1)},
            "additionalProperties": rng.choice([False, True, _random_schema(rng, depth + 1)]),
        }
    if kind == "items":
        return {"items": _random_schema(rng, depth + 1)}
    return {kind: [_random_schema(rng, depth + 1) for _ in range(rng.randrange(1, 4))]}


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return rng.choice([0, 1, 2, 1.0, 2.5])
    if kind == 1:
        return rng.choice(["", "a", "ab", "b", "12", "xa"])
    if kind == 2:
        return rng.choice([True, False])
    if kind in (3, 4):
        return None
    if kind in (5, 6):
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = rng.sample(["a", "b", "bx", "1", "x", "c"], rng.randrange(4))
    return {k: _random_value(rng, depth + 1) for k in keys}


def test_the_bounded_check_agrees_with_jsonschema_on_ordinary_schemas() -> None:
    rng = random.Random(3813)
    for _ in range(1_500):
        schema, value = _random_schema(rng), _random_value(rng)
        stock = validators.Draft202012Validator(schema).is_valid(value)
        assert (answer_problem(schema, value) is None) == stock, (schema, value)


def test_unique_items_compare_as_jsonschema_does() -> None:
    schema = {"uniqueItems": True}
    assert answer_problem(schema, [1, 1.0]) == "at $: [1, 1.0] has non-unique elements"
    assert answer_problem(schema, [1, True, 0, False, {"a": [1]}, {"a": [1.5]}]) is None
    assert answer_problem(schema, [{"a": 1, "b": 2}, {"b": 2, "a": 1}]) is not None
    assert answer_problem(schema, list(range(100_000))) is None  # hashed, not pairwise


@pytest.fixture
def counting() -> Iterator[CountingServer]:
    server = CountingServer()
    server.start()
    yield server
    server.close()


def test_a_reference_outside_the_schema_is_never_resolved_at_check_time(
    counting: CountingServer, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(f'{{"type": "integer", "description": "{PLANTED}"}}')
    rng = random.Random(3814)
    refs = [r for r in remote_refs(rng, counting.base, str(secret)) if not r.startswith("#")]
    for ref in refs:
        for keyword in ("$ref", "$dynamicRef"):
            schema = {"type": "object", "properties": {"a": {keyword: ref}}}
            try:
                outcome = answer_problem(schema, {"a": "not an integer"})
            except CheckBoundError as bound:
                outcome = bound.limit
            assert outcome is None or PLANTED not in outcome, (ref, outcome)
    assert counting.requests == []


def test_each_evil_pattern_on_a_long_string_is_answered_or_stopped_in_bound() -> None:
    for pattern in EVIL_PATTERNS:
        outcome, took, _ = bounded({"pattern": pattern}, "a" * 5_000 + "!")
        assert took < NOT_STALLED, (pattern, took)
        assert outcome is not None, pattern  # "does not match", or the bound it hit


def test_references_that_loop_without_end_stop_named() -> None:
    rng = random.Random(3815)
    for _ in range(20):
        length = rng.randrange(1, 6)
        names = [f"d{i}" for i in range(length)]
        defs: dict[str, Any] = {}
        for index, name in enumerate(names):
            onward = {"$ref": f"#/$defs/{names[(index + 1) % length]}"}
            defs[name] = rng.choice([onward, {"allOf": [onward]}, {"anyOf": [onward]}])
        schema = {"$defs": defs, "$ref": f"#/$defs/{names[0]}"}
        with pytest.raises(CheckBoundError, match="references loop without end"):
            answer_problem(schema, _random_value(rng))
