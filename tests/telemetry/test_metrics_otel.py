"""The same figures through OpenTelemetry metrics, and an oracle's metrics kept to itself."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "opentelemetry.sdk", reason="OpenTelemetry's SDK is not installed: pip install -e '.[otel]'"
)

from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client.parser import text_string_to_metric_families
from support import CodePlugin, fresh_python

from oracle_core import Oracle
from oracle_core.store.memory import MemoryCheckpointer
from oracle_core.telemetry.metrics import OracleMetrics
from oracle_core.testing.openai_server import FakeOpenAI, Reply


def points(reader: InMemoryMetricReader) -> dict[str, list[tuple[dict[str, Any], Any]]]:
    """Each instrument's data points as ``(attributes, point)``, by instrument name."""
    found: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    data = reader.get_metrics_data()
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found[metric.name] = [
                    (dict(p.attributes or {}), p) for p in metric.data.data_points
                ]
    return found


async def test_a_configured_meter_provider_gets_the_same_figures(
    make_oracle: Callable[..., Oracle], fake_openai: FakeOpenAI
) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    fake_openai.script(
        Reply(tool_calls=[("load_capability", {"names": ["weather"]})], usage=(100, 10)),
        Reply(tool_calls=[("weather_tool", {"text": "Porto"})], usage=(200, 20)),
        Reply(content="Rain.", usage=(300, 30)),
    )
    oracle = make_oracle(CodePlugin("weather"), observers=[OracleMetrics(provider)])

    await oracle.run("trip", "Weather?")

    found = points(reader)
    model = oracle.model.name
    assert [(a, p.value) for a, p in found["oracle.runs"]] == [({"status": "completed"}, 1)]
    tokens = {a["direction"]: p.value for a, p in found["oracle.tokens"] if a["model"] == model}
    assert tokens == {"input": 600, "output": 60}
    calls = {(a["plugin"], a["outcome"]): p.value for a, p in found["oracle.tool_calls"]}
    assert calls == {("core", "ok"): 1, ("weather", "ok"): 1}
    assert [p.count for _, p in found["oracle.model_call.duration"]] == [3]
    assert [p.count for _, p in found["oracle.run.duration"]] == [1]
    assert [p.count for _, p in found["oracle.lease_wait"]] == [1]


def test_without_an_sdk_the_api_provider_is_not_taken_for_one() -> None:
    code = (
        "from oracle_core.telemetry.metrics_otel import configured_meter_provider\n"
        "print(configured_meter_provider())\n"
    )

    assert fresh_python(code).strip() == "None"


async def test_two_oracles_in_one_process_count_apart(
    make_oracle: Callable[..., Oracle], fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("One."))
    busy = make_oracle()
    idle = make_oracle()
    busy.metrics.prometheus()
    idle.metrics.prometheus()

    await busy.run("t", "Hi")

    def runs(oracle: Oracle) -> float:
        body, _ = oracle.metrics.prometheus().render()
        return sum(
            s.value
            for family in text_string_to_metric_families(body.decode())
            for s in family.samples
            if s.name == "oracle_runs_total"
        )

    assert (runs(busy), runs(idle)) == (1, 0)


async def test_render_counts_the_waits_of_the_store_it_is_given() -> None:
    metrics = OracleMetrics()

    body, content_type = await metrics.render(MemoryCheckpointer())

    assert content_type.startswith("text/plain; version=0.0.4")
    assert b'oracle_waits_pending{kind="background"} 0.0' in body


def test_an_oracle_nobody_scrapes_never_imports_prometheus_client() -> None:
    code = (
        "import sys\n"
        "from oracle_core import Oracle\n"
        "from oracle_core.store.memory import MemoryCheckpointer\n"
        "oracle = Oracle(entry_points=False, model='demo', checkpointer=MemoryCheckpointer())\n"
        "result = oracle.run_sync('t', 'hello')\n"
        "oracle.close_sync()\n"
        "print(result.status, 'prometheus_client' in sys.modules)\n"
    )

    assert fresh_python(code).split()[-2:] == ["completed", "False"]
