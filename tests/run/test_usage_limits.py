"""Usage limits on a run: requests, tokens, tool calls and cost (docs/limits.md)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeOracle
from support import CodePlugin

from oracle_core import ClientTool, Oracle, RunLimits, RunOptions, RunResult, Settings
from oracle_core.errors import ConfigError, RunLimitError, UsageLimitExceeded
from oracle_core.models.cost import PriceTable
from oracle_core.run.state import RunState
from oracle_core.run.usage_limits import UsageLimits, effective
from oracle_core.testing.openai_server import FakeOpenAI
from oracle_core.testing.script import Reply
from oracle_core.values.messages import Usage
from oracle_core.values.run_options import options_from_json, options_json

PRICED = "gpt-4o-mini"
"""A model litellm's shipped table prices (served by the fake server as any other)."""

USAGE = (1_000, 200)
"""Tokens every scripted reply reports: (prompt, completion)."""


def tool_batch(n: int) -> Reply:
    """One response asking for ``n`` calls of the kit's tool at once."""
    return Reply(tool_calls=[("kit_tool", {"text": str(i)}) for i in range(n)], usage=USAGE)


def answer() -> Reply:
    """A final answer."""
    return Reply(content="done", usage=USAGE)


def cost_of(prompt: int, completion: int) -> float:
    """What the priced model's tokens cost, from the same shipped table."""
    cost = PriceTable().cost(f"openai/{PRICED}", Usage(prompt, completion))
    assert cost is not None
    return cost


@dataclass(frozen=True)
class Case:
    """One limit at one figure: what the run is scripted to do, and whether it completes.

    Attributes:
        limit: the RunLimits field.
        figure: its value.
        replies: what the model answers, in order.
        completes: whether the run ends ``completed`` (else ``failed`` by the limit).
        requests: model requests the fake server gets.
        ran: tool calls that run.
    """

    limit: str
    figure: float
    replies: tuple[Reply, ...]
    completes: bool
    requests: int
    ran: int

    @property
    def id(self) -> str:
        """The case's test id."""
        return f"{self.limit}={self.figure:g}"


def cases() -> list[Case]:
    """Each limit at 0, at 1 and at exactly the figure the run needs."""
    two_steps = (tool_batch(2), answer())  # 2 requests, 2 tool calls
    one = (answer(),)
    prompt, completion = USAGE
    found = [
        Case("max_requests", 0, two_steps, False, 0, 0),
        Case("max_requests", 1, two_steps, False, 1, 2),
        Case("max_requests", 2, two_steps, True, 2, 2),
        Case("max_tool_calls", 0, two_steps, False, 1, 0),
        Case("max_tool_calls", 1, two_steps, False, 1, 0),  # the batch of 2 crosses it
        Case("max_tool_calls", 2, two_steps, True, 2, 2),
    ]
    for limit, figure in (
        ("max_input_tokens", prompt),
        ("max_output_tokens", completion),
        ("max_total_tokens", prompt + completion),
    ):
        found += [
            Case(limit, 0, one, False, 1, 0),
            Case(limit, 1, one, False, 1, 0),
            Case(limit, figure, one, True, 1, 0),
            Case(limit, figure * 2 - 1, two_steps, False, 2, 2),  # crossed at the 2nd step
        ]
    exact = cost_of(prompt, completion)
    found += [
        Case("max_cost", 0, one, False, 1, 0),
        Case("max_cost", exact * 0.999, one, False, 1, 0),
        Case("max_cost", exact, one, True, 1, 0),
        Case("max_cost", 1, two_steps, True, 2, 2),
    ]
    return found


CASES = cases()


async def finish(oracle: Oracle, text: str, *, stream: bool, **options: Any) -> RunResult:
    """Run ``text`` on thread ``t``: streamed (text deltas and all) or not."""
    if not stream:
        return await oracle.run("t", text, **options)
    return RunResult.from_events("t", [e async for e in oracle.stream("t", text, **options)])


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_each_limit_stops_the_run_past_its_figure_and_not_at_it(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, case: Case, stream: bool
) -> None:
    kit = CodePlugin("kit", visibility="always")
    fake_openai.script(*case.replies)
    limit: dict[str, Any] = {case.limit: case.figure}
    oracle = make_oracle(kit, model=fake_openai.model(PRICED), limits=RunLimits(**limit))

    result = await finish(oracle, "go", stream=stream)
    saved = await oracle.checkpointer.load("t")

    assert len(fake_openai.requests) == case.requests
    assert len(kit.calls) == case.ran
    record = saved.runs[-1]
    assert (record.status, record.usage) == (result.status, result.usage)
    assert result.usage == Usage(USAGE[0] * case.requests, USAGE[1] * case.requests)
    if case.completes:
        assert (result.status, result.answer, result.error) == ("completed", "done", None)
        return
    assert result.status == "failed"
    assert result.error is not None and record.error == result.error
    assert result.error.startswith("the run stopped: ")
    variable = f"ORACLE_{case.limit.upper()}"
    assert (
        f"({case.limit}; raise it with {variable} or RunLimits({case.limit}=...))" in result.error
    )


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("width", [2, 3])
async def test_a_parallel_batch_crossing_the_tool_call_limit_runs_none_and_the_thread_goes_on(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, stream: bool, width: int
) -> None:
    kit = CodePlugin("kit", visibility="always")
    fake_openai.script(tool_batch(1), tool_batch(width), Reply.text("next answer"))
    oracle = make_oracle(kit)
    tight = RunOptions(limits=RunLimits(max_tool_calls=width))  # 1 + width crosses it

    stopped = await finish(oracle, "go", stream=stream, options=tight)
    after = await finish(oracle, "and now?", stream=stream)

    assert [name for name, _ in kit.calls] == ["kit_tool"]  # the first batch only
    assert stopped.status == "failed" and stopped.error is not None
    assert f"{width} tool calls at once (none of them ran), {width + 1} in the run" in (
        stopped.error
    )
    assert "over its limit of" in stopped.error and "(max_tool_calls;" in stopped.error
    assert (after.status, after.answer) == ("completed", "next answer")
    sent = fake_openai.requests[-1].messages
    asked = [c["id"] for m in sent if m.get("role") == "assistant" for c in m.get("tool_calls", [])]
    answers = {m["tool_call_id"]: m["content"] for m in sent if m.get("role") == "tool"}
    assert sorted(answers) == sorted(asked) and len(asked) == 1 + width  # each call answered
    stopped_answers = [json.loads(a)["error"] for a in answers.values() if "error" in a]
    assert len(stopped_answers) == width
    assert all(a.startswith("not run: the run stopped: ") for a in stopped_answers)
    assert sent[-1] == {"role": "user", "content": "and now?"}


async def test_a_token_limit_keeps_the_thread_usable_and_the_partial_usage(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply(content="too long", usage=(50, 500)), Reply.text("short"))
    oracle = make_oracle()
    tight = RunOptions(limits=RunLimits(max_output_tokens=100))

    stopped = await oracle.run("t", "first", options=tight)
    after = await oracle.run("t", "second")
    saved = await oracle.checkpointer.load("t")

    assert stopped.status == "failed" and stopped.usage == Usage(50, 500)
    assert stopped.error == (
        "the run stopped: it used 500 output tokens, over its limit of 100 (max_output_tokens; "
        "raise it with ORACLE_MAX_OUTPUT_TOKENS or RunLimits(max_output_tokens=...))"
    )
    assert (saved.runs[0].status, saved.runs[0].usage) == ("failed", Usage(50, 500))
    assert after.status == "completed"
    sent = [m for m in fake_openai.requests[-1].messages if m["role"] != "system"]
    assert sent == [{"role": "user", "content": "second"}]  # the stopped turn is left out


async def test_a_request_limit_of_zero_makes_no_model_call_and_the_thread_goes_on(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("hello"))
    oracle = make_oracle()

    stopped = await oracle.run("t", "first", options=RunOptions(limits=RunLimits(max_requests=0)))
    after = await oracle.run("t", "second")

    assert stopped.status == "failed" and stopped.usage == Usage()
    assert stopped.error is not None and "it would make model request 1" in stopped.error
    assert after.status == "completed" and len(fake_openai.requests) == 1
    sent = [m["content"] for m in fake_openai.requests[0].messages if m["role"] == "user"]
    assert sent == ["second"]  # the stopped turn's message is not sent again


async def test_a_run_limit_only_tightens_the_oracle_limit(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply(content="ok", usage=(10, 10)))
    oracle = make_oracle(limits=RunLimits(max_total_tokens=5))
    loose = RunOptions(limits=RunLimits(max_total_tokens=1_000, max_requests=3))

    result = await oracle.run("t", "go", options=loose)

    assert result.status == "failed" and result.error is not None
    assert "over its limit of 5 (max_total_tokens;" in result.error
    assert effective(RunLimits(max_cost=2.0), loose.limits) == {
        "max_cost": 2.0,
        "max_total_tokens": 1_000,
        "max_requests": 3,
    }


@pytest.mark.parametrize(
    "limits",
    [RunLimits(max_requests=0), RunLimits(max_cost=0.5, max_tool_calls=3), RunLimits()],
    ids=["zero", "two", "none"],
)
def test_run_options_keep_a_runs_usage_limits_for_its_resumption(limits: RunLimits) -> None:
    options = RunOptions(limits=limits)

    kept = options_from_json(options_json(options))

    assert (kept.limits.usage if kept.limits else {}) == limits.usage


async def test_an_unpriced_model_has_no_cost_limit_and_a_warning_says_so(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.script(Reply(content="a", usage=(10**6, 10**6)), Reply(content="b", usage=(1, 1)))
    oracle = make_oracle(limits=RunLimits(max_cost=0))

    with caplog.at_level(logging.WARNING, "oracle_core"):
        first = await oracle.run("t", "one")
        second = await oracle.run("t", "two")

    assert (first.status, second.status) == ("completed", "completed")
    warnings = [r.getMessage() for r in caplog.records if "price" in r.getMessage()]
    assert len(warnings) == 2  # once per run
    assert all("'openai/fake-model'" in w and "cost limit cannot hold" in w for w in warnings)


@pytest.mark.parametrize(
    ("model", "cost", "warned"),
    [
        ("openai/fake-model", "1", True),
        (f"openai/{PRICED}", "1", False),
        ("openai/fake-model", "", False),  # no cost limit: nothing to say
    ],
)
async def test_the_oracle_says_at_start_when_its_model_has_no_price(
    make_oracle: MakeOracle,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    model: str,
    cost: str,
    warned: bool,
) -> None:
    env = {"ORACLE_HOME": str(tmp_path / "h"), "ORACLE_MODEL": model, "ORACLE_MAX_COST": cost}
    oracle = make_oracle(settings=Settings.from_env(env))

    with caplog.at_level(logging.WARNING, "oracle_core"):
        await oracle.start()

    said = [r.getMessage() for r in caplog.records if "has no price" in r.getMessage()]
    assert said == ([UsageLimits(RunLimits(max_cost=1)).check_model(model)] if warned else [])


@pytest.mark.parametrize(
    ("limit", "method", "args", "actual"),
    [
        ("max_requests", "before_model", (3,), 3),
        ("max_tool_calls", "before_tools", ([{"id": "a"}, {"id": "b"}, {"id": "c"}],), 3),
        ("max_input_tokens", "after_model", (1, Usage(7, 1)), 7),
    ],
)
async def test_the_error_is_typed_and_names_the_limit_its_figure_and_the_actual(
    limit: str, method: str, args: tuple[Any, ...], actual: int
) -> None:
    state = RunState.new("t", "go")
    state.record.usage = Usage(7, 1)
    guard = UsageLimits(RunLimits(**{limit: 2}))

    with pytest.raises(UsageLimitExceeded) as caught:
        await getattr(guard, method)(state, *args)

    assert isinstance(caught.value, RunLimitError)
    assert (caught.value.limit, caught.value.value, caught.value.actual) == (limit, 2, actual)
    assert f"{actual:,}" in str(caught.value) and "over its limit of 2" in str(caught.value)


@pytest.mark.parametrize(
    ("variable", "value", "field", "expected"),
    [
        ("ORACLE_MAX_REQUESTS", "0", "max_requests", 0),
        ("ORACLE_MAX_INPUT_TOKENS", "1000", "max_input_tokens", 1000),
        ("ORACLE_MAX_OUTPUT_TOKENS", " 5 ", "max_output_tokens", 5),
        ("ORACLE_MAX_TOTAL_TOKENS", "", "max_total_tokens", None),
        ("ORACLE_MAX_TOOL_CALLS", "2", "max_tool_calls", 2),
        ("ORACLE_MAX_COST", "0.25", "max_cost", 0.25),
    ],
)
def test_settings_read_each_usage_limit(
    variable: str, value: str, field: str, expected: float | None
) -> None:
    settings = Settings.from_env({variable: value})

    assert getattr(settings.run_limits, field) == expected


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ORACLE_MAX_REQUESTS", "-1"),
        ("ORACLE_MAX_TOOL_CALLS", "1.5"),
        ("ORACLE_MAX_TOTAL_TOKENS", "lots"),
        ("ORACLE_MAX_COST", "nan"),
        ("ORACLE_MAX_COST", "-0.01"),
    ],
)
def test_a_bad_usage_limit_setting_names_its_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({variable: value})

    assert caught.value.key == variable and variable in str(caught.value)


@pytest.mark.parametrize(
    "given",
    [
        {"max_requests": -1},
        {"max_tool_calls": 1.5},
        {"max_cost": float("nan")},
        {"max_cost": float("inf")},
        {"max_output_tokens": True},
    ],
)
def test_run_limits_refuse_a_bad_usage_limit_naming_it(given: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(given))):
        RunLimits(**given)


@pytest.mark.parametrize(
    ("limit", "ran", "actual"), [("max_tool_calls", 1, 3), ("max_requests", 2, 3)]
)
async def test_a_runs_limits_count_its_resumed_part_too(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, limit: str, ran: int, actual: int
) -> None:
    kit = CodePlugin("kit", visibility="always")
    fake_openai.script(
        Reply.calls(("kit_tool", {}), ("lookup", {})), Reply.call("kit_tool"), answer()
    )
    oracle = make_oracle(kit)
    lookup = ClientTool("lookup", "Look it up.")
    options = RunOptions(client_tools=(lookup,), limits=RunLimits(**{limit: 2}))

    first = await oracle.run("t", "go", options=options)
    [handed] = first.client_calls
    done = await oracle.run("t", tool_results={handed["id"]: "found"})  # its options kept

    assert first.status == "waiting_for_client"
    assert (done.run_id, done.status) == (first.run_id, "failed")
    assert done.error is not None and f"({limit};" in done.error
    assert f"{actual:,}" in done.error
    assert len(kit.calls) == ran
