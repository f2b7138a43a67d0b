"""With content tracing off, no text of a run reaches its spans, log lines or metrics
(issue 38, hole 5): failing runs carry seeded planted strings in the user's message, the
model's arguments and answers, a tool's result, a tool's exception, a provider error that
echoes the prompt, an output-validation failure and a middleware's exception, and every span
the SDK's in-memory exporter holds (name, attributes, events, status, links, resource) is
searched for them, and so are the run's log line and the Prometheus metrics. With
``content`` on, they are where docs/observability.md says."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "opentelemetry.sdk", reason="OpenTelemetry's SDK is not installed: pip install -e '.[otel]'"
)

import json
import logging
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import MakeOracle
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from oracle_core import (
    Middleware,
    ModelRequest,
    PluginManifest,
    RunOptions,
    Settings,
    Tool,
    hookimpl,
    tool,
)
from oracle_core.errors import OracleError
from oracle_core.telemetry.metrics import OracleMetrics
from oracle_core.telemetry.span_content import FAILED, REASONS, failure
from oracle_core.telemetry.tracing import TracingObserver
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.output import OutputSchema

SEEDS = range(3850, 3858)
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _planted(rng: random.Random, role: str) -> tuple[str, str]:
    """A text carrying a fresh marker (the marker survives escaping, cutting and joining)."""
    marker = f"PLANT{role}{rng.getrandbits(64):016x}"
    shapes: list[Callable[[], str]] = [
        lambda: marker,
        lambda: f"please keep {marker} private",
        lambda: f'"{marker}"\n\tline two été ✓ {{"json": [1, 2]}}',
        lambda: "x" * rng.randrange(300, 3000) + f" {marker} " + "y" * rng.randrange(10, 400),
        lambda: f"{marker}\n" + "\n".join("line" for _ in range(rng.randrange(1, 30))),
    ]
    return marker, rng.choice(shapes)()


@dataclass
class Plants:
    """The planted texts of one run, by where they are planted, and their markers."""

    rng: random.Random
    texts: dict[str, str] = field(default_factory=dict)
    markers: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, role: str) -> str:
        if role not in self.texts:
            self.markers[role], self.texts[role] = _planted(self.rng, role)
        return self.texts[role]


class _Raising(Middleware):
    def __init__(self, text: str, on_step: int) -> None:
        self.text, self.on_step = text, on_step

    async def before_model_call(self, request: ModelRequest) -> ModelRequest | None:
        if request.step == self.on_step:
            raise ValueError(self.text)
        return None


class PlantPlugin:
    """Tools that answer and raise with planted text, and maybe a raising middleware."""

    def __init__(self, plants: Plants, middleware_step: int | None = None) -> None:
        self.plants, self.middleware_step = plants, middleware_step

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="plant", summary="Planted text.", when_to_use=["tests"], visibility="always"
        )

    @hookimpl
    def oracle_tools(self) -> list[Tool]:
        plants = self.plants

        @tool
        def echo(text: str) -> str:
            """Answer with the text and a planted result."""
            return f"{text} {plants['result']}"

        @tool
        def explode(text: str) -> str:
            """Raise with a planted message."""
            raise RuntimeError(f"{plants['raised']} {text}")

        return [echo, explode]

    @hookimpl
    def oracle_middleware(self) -> list[Middleware]:
        if self.middleware_step is None:
            return []
        return [_Raising(self.plants["middleware"], self.middleware_step)]


def _output_failure(plants: Plants) -> tuple[list[Reply], RunOptions | None, int | None]:
    answers = [json.dumps({"n": plants["answer"]}), json.dumps({"n": plants["answer2"]})]
    replies = [Reply.call("echo", {"text": plants["argument"]}), *map(Reply.text, answers)]
    return replies, RunOptions(output=OutputSchema.from_schema(SCHEMA)), None


def _provider_echo(plants: Plants) -> tuple[list[Reply], RunOptions | None, int | None]:
    replies = [
        Reply.call("explode", {"text": plants["argument"]}),
        Reply.error(400, f"invalid request: the prompt {plants['user']!r} is refused"),
    ]
    return replies, None, None


def _middleware(plants: Plants) -> tuple[list[Reply], RunOptions | None, int | None]:
    replies = [Reply.calls(("echo", {"text": plants["argument"]}), ("explode", {"text": "z"}))]
    return replies, None, 2


def _meta_tools(plants: Plants) -> tuple[list[Reply], RunOptions | None, int | None]:
    calls: list[tuple[str, dict[str, Any] | str]] = [
        ("load_capability", {"names": [plants["name"][:60], "plant"]}),
        (plants["tool"][:60].replace(" ", "_"), {"text": plants["argument"]}),
    ]
    if plants.rng.random() < 0.3:  # the search ranker's set-up is slow: some runs only
        calls.append(("search_capabilities", {"queries": [plants["query"]]}))
    replies = [
        Reply.calls(*calls),
        Reply.error(400, f"invalid request: {plants['user']!r}"),
    ]
    return replies, None, None


SCENARIOS = {
    "output": _output_failure,
    "provider": _provider_echo,
    "middleware": _middleware,
    "meta": _meta_tools,
}


@dataclass
class Outcome:
    """What one traced run left: its spans, log lines and metrics, and what was planted."""

    plants: Plants
    error: str | None
    spans: list[ReadableSpan]
    logs: str
    metrics: str


async def _traced_run(
    make_oracle: MakeOracle,
    fake_openai: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
    home: Path,
    scenario: str,
    seed: int,
    content: bool,
) -> Outcome:
    plants = Plants(random.Random(f"{scenario}-{seed}"))
    replies, options, middleware_step = SCENARIOS[scenario](plants)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    metrics = OracleMetrics()
    metrics.prometheus()
    env = {"ORACLE_HOME": str(home), **({"ORACLE_TRACE_CONTENT": "1"} if content else {})}
    oracle = make_oracle(
        PlantPlugin(plants, middleware_step),
        observers=[TracingObserver(provider, content=content), metrics],
        settings=Settings.from_env(env),  # the oracle's own run log reads the switch
    )
    fake_openai.script(*replies)
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        result = await oracle.run(f"t-{scenario}-{seed}", plants["user"], options=options)
    assert result.status == "failed", (scenario, result.status, result.error)
    logs = "\n".join(
        f"{r.getMessage()} {r.exc_text or ''} {json.dumps(r.__dict__, default=str)}"
        for r in caplog.records
        if r.name == "oracle_core.runs"  # the run's own line (telemetry/run_log.py)
    )
    return Outcome(
        plants,
        result.error,
        list(exporter.get_finished_spans()),
        logs,
        metrics.prometheus().render("")[0].decode(),
    )


def _whole(span: ReadableSpan) -> str:
    """Everything the SDK exports of ``span``: name, attributes, events, status, links,
    resource, scope."""
    return span.to_json(indent=None)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_no_planted_text_reaches_a_span_a_log_line_or_a_metric_with_content_off(
    make_oracle: MakeOracle,
    fake_openai: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    scenario: str,
) -> None:
    seen: set[str] = set()
    for seed in SEEDS:
        outcome = await _traced_run(
            make_oracle, fake_openai, caplog, tmp_path, scenario, seed, content=False
        )
        seen.update(s.name for s in outcome.spans)
        assert {s.name.split(" ")[0] for s in outcome.spans} >= {"invoke_agent", "chat"}
        failed = [s for s in outcome.spans if s.status.status_code.name == "ERROR"]
        assert failed, [s.name for s in outcome.spans]
        for span in outcome.spans:
            whole = _whole(span)
            for role, marker in outcome.plants.markers.items():
                assert marker not in whole, (scenario, seed, role, span.name, whole[:2000])
        run = next(s for s in outcome.spans if s.name.startswith("invoke_agent"))
        description = run.status.description or ""
        assert description.split(":")[0].endswith("Error"), description  # the error's type
        for role, marker in outcome.plants.markers.items():
            assert marker not in outcome.logs, (scenario, seed, role, outcome.logs[:3000])
            assert marker not in outcome.metrics, (scenario, seed, role)
        # The run's own error still says it all: only what is exported is kept content-free.
        assert outcome.error
    if scenario == "meta":  # every span kind the class means to reach was reached
        assert {
            "execute_tool (unknown)",
            "execute_tool load_capability",
            "execute_tool search_capabilities",
        } <= seen, seen


async def test_a_failed_runs_status_names_its_error_type_and_a_fixed_reason(
    make_oracle: MakeOracle,
    fake_openai: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    expected = {
        "output": "OutputValidationError: the answer does not fit the output schema",
        "provider": "ModelError: the model call failed",
        "middleware": "MiddlewareError: a middleware failed",
    }
    for scenario, description in expected.items():
        descriptions = set()
        for seed in SEEDS[:3]:
            outcome = await _traced_run(
                make_oracle, fake_openai, caplog, tmp_path, scenario, seed, content=False
            )
            run = next(s for s in outcome.spans if s.name.startswith("invoke_agent"))
            descriptions.add(run.status.description)
        assert descriptions == {description}, scenario


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_with_content_on_the_planted_text_is_where_the_docs_say(
    make_oracle: MakeOracle,
    fake_openai: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    scenario: str,
) -> None:
    for seed in SEEDS[:3]:
        outcome = await _traced_run(
            make_oracle, fake_openai, caplog, tmp_path, scenario, seed, content=True
        )
        markers = outcome.plants.markers
        run = next(s for s in outcome.spans if s.name.startswith("invoke_agent"))
        attrs = dict(run.attributes or {})
        assert markers["user"] in str(attrs["gen_ai.input.messages"])
        tools = [dict(s.attributes or {}) for s in outcome.spans if s.name.startswith("execute")]
        assert any(markers["argument"] in str(t["gen_ai.tool.call.arguments"]) for t in tools)
        if "result" in markers:
            assert any(markers["result"] in str(t["gen_ai.tool.call.result"]) for t in tools)
        if "raised" in markers:
            assert any(markers["raised"] in str(t["gen_ai.tool.call.result"]) for t in tools)
        # The run's error, as the run reports it, is its status description.
        assert outcome.error is not None
        assert outcome.error[:200] in (run.status.description or "")
        assert outcome.error.splitlines()[0][:200] in outcome.logs  # and the run's log line
        assert (run.status.description or "").split(":")[0].endswith("Error")


def _error_types() -> list[type[BaseException]]:
    """Every error type of oracle_core.errors, and some a plugin or a library may raise."""
    errors = sys.modules[OracleError.__module__]
    ours = [v for v in vars(errors).values() if isinstance(v, type) and issubclass(v, Exception)]
    return [
        *ours,
        ValueError,
        RuntimeError,
        TimeoutError,
        KeyError,
        type("PluginOwnError", (Exception,), {}),
    ]


def test_a_failure_is_described_by_its_type_and_a_fixed_reason_unless_content_is_on() -> None:
    rng = random.Random(3859)
    types = _error_types()
    assert len(types) > 30
    for _ in range(600):
        error_type = rng.choice(types)
        marker, text = _planted(rng, "error")
        described = failure(error_type, text, content=False)
        assert marker not in described
        name, _, reason = described.partition(": ")
        assert name == error_type.__name__
        assert reason in {*REASONS.values(), FAILED}
        assert failure(error_type, text, content=True).startswith(f"{error_type.__name__}: ")
        assert marker in failure(error_type, text[:16_000], content=True)
    assert failure(None, "text", content=False) == FAILED
    # A subclass without a reason of its own is described by its nearest base's.
    limit = next(t for t in types if t.__name__ == "OutputLimitError")
    assert failure(limit, "x", False) == f"OutputLimitError: {REASONS['OutputLimitError']}"
    budget = next(t for t in types if t.__name__ == "BudgetExceededError")
    assert (
        failure(type("Spent", (budget,), {}), "x", False)
        == f"Spent: {REASONS['BudgetExceededError']}"
    )
