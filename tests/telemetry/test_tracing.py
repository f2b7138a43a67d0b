"""OpenTelemetry spans of runs (telemetry/tracing.py), checked with the SDK's in-memory exporter:
names, GenAI attributes, parent-child shape, no content by default, the gate's refusal, the
meta-tools, and a resumed run in the waiting run's trace."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "opentelemetry.sdk", reason="OpenTelemetry's SDK is not installed: pip install -e '.[otel]'"
)

import asyncio
import json
import random
from pathlib import Path
from typing import Any

from conftest import MakeOracle
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support import CodePlugin
from waits_support import CallsThenText, Kit, build_oracle, counting_tool

from oracle_core import Settings
from oracle_core.telemetry import default_observers
from oracle_core.telemetry.otel_setup import (
    Providers,
    configure_from_env,
    exporters,
    traces_wanted,
)
from oracle_core.telemetry.run_log import RunLog
from oracle_core.telemetry.tracing import NOTE, TracingObserver, run_anchor
from oracle_core.testing.openai_server import FakeOpenAI, Reply

CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


class Traced:
    """An SDK tracer provider of the test's own, exporting to memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def observer(self, content: bool = False) -> TracingObserver:
        return TracingObserver(self.provider, content=content)

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name.startswith(prefix)]

    def one(self, prefix: str) -> ReadableSpan:
        found = self.named(prefix)
        assert len(found) == 1, [s.name for s in self.spans]
        return found[0]


@pytest.fixture
def traced() -> Traced:
    return Traced()


def every_value(spans: list[ReadableSpan]) -> str:
    """All attribute and event-attribute values of ``spans`` as one text."""
    parts: list[str] = []
    for span in spans:
        for value in (span.attributes or {}).values():
            parts.append(str(value))
        for event in span.events:
            parts.append(event.name)
            parts.extend(str(v) for v in (event.attributes or {}).values())
        parts.append(str(span.status.description))
    return "\n".join(parts)


def test_a_run_is_an_invoke_agent_span_with_chat_and_execute_tool_children(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, traced: Traced
) -> None:
    oracle = make_oracle(CodePlugin("notes", visibility="always"), observers=[traced.observer()])
    fake_openai.script(Reply.call("notes_tool", {"text": "private words"}), Reply.text("done"))

    result = oracle.run_sync("t", "write my secret diary")

    assert result.status == "completed"
    run = traced.one("invoke_agent")
    assert run.name == "invoke_agent oracle"
    attrs = dict(run.attributes or {})
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.agent.name"] == "oracle"
    assert attrs["gen_ai.conversation.id"] == "t"
    assert attrs["oracle.run.id"] == result.run_id
    assert attrs["oracle.run.status"] == "completed"
    assert attrs["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens
    # No incoming parent: the trace is the run's own, derived from its id.
    assert run.context.trace_id == run_anchor(result.run_id).trace_id
    assert run.parent is not None and run.parent.span_id == run_anchor(result.run_id).span_id

    chats = sorted(traced.named("chat"), key=lambda s: s.start_time or 0)
    assert [c.name for c in chats] == ["chat fake-model", "chat fake-model"]
    first, second = (dict(c.attributes or {}) for c in chats)
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "fake-model"
    assert first["gen_ai.provider.name"] == "openai"
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert second["gen_ai.response.finish_reasons"] == ("stop",)
    assert isinstance(first["gen_ai.usage.input_tokens"], int)
    assert isinstance(first["gen_ai.usage.output_tokens"], int)

    tool = traced.one("execute_tool")
    assert tool.name == "execute_tool notes_tool"
    tattrs = dict(tool.attributes or {})
    assert tattrs["gen_ai.operation.name"] == "execute_tool"
    assert tattrs["gen_ai.tool.name"] == "notes_tool"
    assert tattrs["gen_ai.tool.call.id"]
    assert tattrs["oracle.plugin.name"] == "notes"
    assert tattrs["oracle.tool.outcome"] == "ok"

    for child in [*chats, tool]:
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
        assert run.start_time <= child.start_time <= child.end_time <= run.end_time  # type: ignore[operator]
    assert chats[0].end_time <= tool.start_time  # type: ignore[operator]

    # No content by default: neither what the user said, nor arguments, nor results.
    spans = traced.spans
    assert not any(CONTENT_KEYS & set(s.attributes or {}) for s in spans)
    text = every_value(spans)
    assert "secret diary" not in text and "private words" not in text and text != "done"


def test_content_is_recorded_only_when_the_operator_opts_in(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, traced: Traced
) -> None:
    oracle = make_oracle(
        CodePlugin("notes", visibility="always"), observers=[traced.observer(content=True)]
    )
    fake_openai.script(Reply.call("notes_tool", {"text": "private words"}), Reply.text("done"))

    oracle.run_sync("t", "write my diary")

    run = dict(traced.one("invoke_agent").attributes or {})
    assert "write my diary" in str(run["gen_ai.input.messages"])
    assert "done" in str(run["gen_ai.output.messages"])
    tool = dict(traced.one("execute_tool").attributes or {})
    assert json.loads(str(tool["gen_ai.tool.call.arguments"])) == {"text": "private words"}
    assert "private words" in str(tool["gen_ai.tool.call.result"])
    first, second = sorted(traced.named("chat"), key=lambda s: s.start_time or 0)
    sent = json.loads(str(dict(first.attributes or {})["gen_ai.input.messages"]))
    assert sent[-1] == {"role": "user", "parts": [{"type": "text", "content": "write my diary"}]}
    answered = json.loads(str(dict(first.attributes or {})["gen_ai.output.messages"]))
    assert answered[0]["role"] == "assistant"
    assert [p["type"] for p in answered[0]["parts"]] == ["tool_call"]
    assert answered[0]["parts"][0]["name"] == "notes_tool"
    resent = json.loads(str(dict(second.attributes or {})["gen_ai.input.messages"]))
    assert resent[-1]["role"] == "tool"
    assert resent[-1]["parts"][0]["type"] == "tool_call_response"


def test_the_setting_turns_content_on(tmp_path: Path) -> None:
    off = default_observers(Settings.from_env({"ORACLE_HOME": str(tmp_path)}))
    on = default_observers(
        Settings.from_env({"ORACLE_HOME": str(tmp_path), "ORACLE_TRACE_CONTENT": "1"})
    )
    assert [type(o) for o in off] == [TracingObserver, RunLog] and not off[0].content  # type: ignore[attr-defined]
    assert on[0].content  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, False),
    ],
)
def test_the_standard_variables_say_whether_traces_are_wanted(
    env: dict[str, str], wanted: bool
) -> None:
    assert traces_wanted(env) is wanted
    if not wanted:  # (metrics off: nothing is installed in this test process)
        assert configure_from_env({**env, "OTEL_METRICS_EXPORTER": "none"}) == Providers()


@pytest.mark.parametrize("seed", range(5))
def test_the_exporter_lists_are_read_as_the_sdk_reads_them(seed: int) -> None:
    rng = random.Random(seed)
    names = rng.sample(["otlp", "console", "OTLP", " Console ", "zipkin"], k=rng.randint(1, 4))
    env = {"OTEL_TRACES_EXPORTER": ",".join(names), "OTEL_METRICS_EXPORTER": "none"}
    expected = list(dict.fromkeys(n.strip().lower() for n in names))

    assert exporters(env, "traces") == expected
    assert exporters({**env, "OTEL_TRACES_EXPORTER": ",".join([*names, "none"])}, "traces") == []
    assert exporters({**env, "OTEL_SDK_DISABLED": "TRUE"}, "traces") == []
    assert exporters(env, "metrics") == []
    assert exporters({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c"}, "metrics") == ["otlp"]
    assert exporters({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c"}, "traces") == []


def test_without_an_sdk_a_run_keeps_nothing_and_makes_no_span(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    class Peek:
        def __init__(self) -> None:
            self.notes: list[bool] = []

        def observe(self, registry: Any, state: Any, event: Any) -> None:
            self.notes.append(any(k.startswith(NOTE) for k in state.notes))

    peek = Peek()
    observer = TracingObserver()  # the global provider: the API's proxy, no SDK
    oracle = make_oracle(CodePlugin("notes", visibility="always"), observers=[observer, peek])
    fake_openai.script(Reply.call("notes_tool", {"text": "x"}), Reply.text("done"))

    assert oracle.run_sync("t", "hi").status == "completed"
    assert peek.notes and not any(peek.notes)


def test_a_refused_call_has_the_gates_refusal_as_an_event(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, traced: Traced
) -> None:
    hidden = CodePlugin("vault", visibility="on-demand")
    oracle = make_oracle(hidden, observers=[traced.observer()])
    fake_openai.script(Reply.call("vault_tool", {"text": "x"}), Reply.text("ok"))

    oracle.run_sync("t", "open it")

    assert hidden.calls == []
    tool = traced.one("execute_tool")
    assert dict(tool.attributes or {})["oracle.tool.outcome"] == "refused"
    assert [e.name for e in tool.events] == ["oracle.gate.refused"]
    assert tool.status.status_code.name == "ERROR"


def test_capability_search_and_load_carry_queries_candidates_and_loaded_names(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, traced: Traced
) -> None:
    weather = CodePlugin("weather", summary="Weather forecasts for any city.")
    oracle = make_oracle(weather, observers=[traced.observer()])
    fake_openai.script(
        Reply.call("search_capabilities", {"queries": ["weather forecast", "rain"]}),
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.text("loaded"),
    )

    assert oracle.run_sync("t", "will it rain?").status == "completed"

    search = dict(traced.one("execute_tool search_capabilities").attributes or {})
    assert search["oracle.capabilities.queries"] == 2
    assert "weather" in search["oracle.capabilities.candidates"]  # type: ignore[operator]
    assert search["oracle.capabilities.candidates.count"] >= 1  # type: ignore[operator]
    assert search["oracle.plugin.name"] == "oracle"
    load = dict(traced.one("execute_tool load_capability").attributes or {})
    assert load["oracle.capabilities.requested"] == ("weather",)
    assert load["oracle.capabilities.loaded"] == ("weather",)
    run = traced.one("invoke_agent")
    assert "oracle.capability.loaded" in [e.name for e in run.events]


def test_a_failing_model_call_ends_its_span_with_an_error(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, traced: Traced
) -> None:
    oracle = make_oracle(observers=[traced.observer()])
    fake_openai.script(Reply.error(400, "the provider broke"))

    result = oracle.run_sync("t", "hi")

    assert result.status == "failed"
    chat = traced.one("chat")
    assert chat.status.status_code.name == "ERROR"
    assert traced.one("invoke_agent").status.status_code.name == "ERROR"


async def test_a_run_resumed_by_another_oracle_is_in_the_waiting_runs_trace(
    tmp_path: Path,
) -> None:
    db, log = tmp_path / "oracle.db", tmp_path / "calls.log"
    first, second = Traced(), Traced()  # two processes: nothing shared but the store
    model = CallsThenText([("delete", {"path": "a.txt"})])
    waiting = build_oracle(db, Kit(counting_tool(log)), model=model, observers=[first.observer()])
    async with waiting:
        result = await waiting.run("t", "please delete a.txt")
    assert result.status == "waiting_for_approval"
    operation = result.operations[0]

    resumer = build_oracle(db, Kit(counting_tool(log)), observers=[second.observer()])
    async with resumer:
        done = await resumer.decide(operation.id, approve=True, reason="fine")
    assert done.status == "completed", done.error

    waited = first.one("invoke_agent")
    assert dict(waited.attributes or {})["oracle.run.status"] == "waiting_for_approval"
    wait = first.one("wait approval")
    wattrs = dict(wait.attributes or {})
    assert wattrs["oracle.operation.id"] == operation.id
    assert wattrs["oracle.operation.kind"] == "approval"
    assert wait.parent is not None and wait.parent.span_id == waited.context.span_id
    held = first.one("execute_tool delete")
    assert dict(held.attributes or {})["oracle.tool.outcome"] == "waiting_for_approval"

    resumed = second.one("invoke_agent")
    rattrs = dict(resumed.attributes or {})
    assert rattrs["oracle.run.id"] == result.run_id and rattrs["oracle.run.resumed"] is True
    assert resumed.context.trace_id == waited.context.trace_id  # the same trace, nothing saved
    decision = second.one("resume approval")
    assert dict(decision.attributes or {})["oracle.operation.decision"] == "approved"
    assert dict(decision.attributes or {})["oracle.operation.id"] == operation.id
    ran = second.one("execute_tool delete")
    assert dict(ran.attributes or {})["oracle.tool.outcome"] == "ok"
    assert "fine" not in every_value(second.spans)  # a person's reason is content


async def test_a_run_resumed_in_the_same_oracle_links_to_the_span_that_waited(
    tmp_path: Path, traced: Traced
) -> None:
    db, log = tmp_path / "oracle.db", tmp_path / "calls.log"
    model = CallsThenText([("delete", {"path": "a.txt"})])
    oracle = build_oracle(db, Kit(counting_tool(log)), model=model, observers=[traced.observer()])
    async with oracle:
        result = await oracle.run("t", "please delete a.txt")
        await oracle.decide(result.operations[0].id, approve=False, reason="no")

    waited, resumed = sorted(traced.named("invoke_agent"), key=lambda s: s.start_time or 0)
    assert [link.context.span_id for link in resumed.links] == [waited.context.span_id]
    decision = traced.one("resume approval")
    assert dict(decision.attributes or {})["oracle.operation.decision"] == "denied"


def test_an_observer_that_breaks_never_breaks_the_run(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, traced: Traced
) -> None:
    observer = traced.observer()
    traced.provider.shutdown()  # spans are dropped; the run does not notice
    oracle = make_oracle(CodePlugin("notes", visibility="always"), observers=[observer])
    fake_openai.script(Reply.call("notes_tool", {"text": "x"}), Reply.text("done"))
    assert asyncio.run(oracle.run("t", "hi")).status == "completed"
