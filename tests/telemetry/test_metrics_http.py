"""``GET /metrics`` after scripted runs, read back with prometheus-client's own parser."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support import Careful, CodePlugin, fresh_python

from oracle_core import Oracle
from oracle_core.server import create_app
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.limits import RunLimits

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass
class Served:
    """An app serving an oracle, with an in-process client."""

    oracle: Oracle
    client: httpx.AsyncClient


Serve = Callable[..., Any]


@pytest.fixture
async def serve(make_oracle: Callable[..., Oracle]) -> AsyncIterator[Serve]:
    """Start ``create_app`` (lifespan included) over an oracle made from ``plugins``."""
    async with AsyncExitStack() as stack:

        async def start(
            *plugins: object, tokens: tuple[str, ...] = (), host: str = "127.0.0.1", **options: Any
        ) -> Served:
            oracle = make_oracle(*plugins, **options)
            app = create_app(oracle, tokens=tokens)
            await stack.enter_async_context(app.router.lifespan_context(app))
            transport = httpx.ASGITransport(app=app)
            client = httpx.AsyncClient(transport=transport, base_url=f"http://{host}")
            await stack.enter_async_context(client)
            return Served(oracle, client)

        yield start


async def scrape(client: httpx.AsyncClient, **headers: str) -> Samples:
    """Every sample of ``GET /metrics``, by name and labels."""
    response = await client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name`` with exactly ``labels`` (0 when absent)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_a_scripted_run_is_counted_by_status_model_tokens_and_plugin(
    serve: Serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply(tool_calls=[("load_capability", {"names": ["weather"]})], usage=(100, 10)),
        Reply(tool_calls=[("weather_tool", {"text": "Porto"})], usage=(200, 20)),
        Reply(content="Rain in Porto.", usage=(300, 30)),
    )
    served = await serve(CodePlugin("weather"))
    run = await served.client.post("/threads/trip/runs", json={"message": "Weather?"})
    assert run.json()["status"] == "completed"
    model = served.oracle.model.name

    samples = await scrape(served.client)

    assert value(samples, "oracle_runs_total", status="completed") == 1
    assert value(samples, "oracle_run_duration_seconds_count") == 1
    assert value(samples, "oracle_model_call_duration_seconds_count", model=model) == 3
    assert value(samples, "oracle_tokens_total", model=model, direction="input") == 600
    assert value(samples, "oracle_tokens_total", model=model, direction="output") == 60
    assert value(samples, "oracle_tool_calls_total", plugin="core", outcome="ok") == 1
    assert value(samples, "oracle_tool_calls_total", plugin="weather", outcome="ok") == 1
    assert value(samples, "oracle_refusals_total") == 0
    assert value(samples, "oracle_lease_wait_seconds_count") == 1
    assert value(samples, "oracle_waits_pending", kind="approval") == 0


async def test_no_label_carries_a_thread_run_or_user_id(
    serve: Serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Hi."))
    served = await serve()
    await served.client.post(
        "/threads/thread-secret/runs", json={"message": "Hi", "user_id": "user-secret"}
    )

    response = await served.client.get("/metrics")

    assert "oracle_runs_total" in response.text
    assert "secret" not in response.text
    assert "run_" not in response.text.replace("oracle_run_", "")


async def test_a_refused_call_and_a_made_up_tool_are_counted_without_their_names(
    serve: Serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply.calls(("weather_tool", {"text": "Porto"}), ("rm_rf_everything", {})),
        Reply.text("I cannot."),
    )
    served = await serve(CodePlugin("weather"))
    await served.client.post("/threads/trip/runs", json={"message": "Weather?"})

    samples = await scrape(served.client)

    assert value(samples, "oracle_refusals_total") == 2
    assert value(samples, "oracle_tool_calls_total", plugin="weather", outcome="refused") == 1
    assert value(samples, "oracle_tool_calls_total", plugin="unknown", outcome="refused") == 1
    assert not any("rm_rf" in str(labels) for _, labels in samples)


async def test_a_call_that_fails_is_counted_as_an_error_of_its_plugin(
    serve: Serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.call("weather_tool", {"text": ["not", "text"]}), Reply.text("Oops."))
    served = await serve(CodePlugin("weather", visibility="always"))
    await served.client.post("/threads/trip/runs", json={"message": "Weather?"})

    samples = await scrape(served.client)

    assert value(samples, "oracle_tool_calls_total", plugin="weather", outcome="error") == 1
    assert value(samples, "oracle_tool_calls_total", plugin="weather", outcome="ok") == 0
    assert value(samples, "oracle_refusals_total") == 0


async def test_searches_are_counted_and_timed(serve: Serve, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        Reply.call("search_capabilities", {"queries": ["weather forecast"]}),
        Reply.text("Found it."),
    )
    served = await serve(CodePlugin("weather"))
    await served.client.post("/threads/trip/runs", json={"message": "Weather?"})

    samples = await scrape(served.client)

    assert value(samples, "oracle_searches_total") == 1
    assert value(samples, "oracle_search_duration_seconds_count") == 1
    assert value(samples, "oracle_tool_calls_total", plugin="core", outcome="ok") == 1


async def test_a_failed_model_call_ends_the_run_as_failed(
    serve: Serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.error(400, "bad request"))
    served = await serve()
    await served.client.post("/threads/trip/runs", json={"message": "Hi"})

    samples = await scrape(served.client)

    assert value(samples, "oracle_runs_total", status="failed") == 1
    assert value(samples, "oracle_runs_total", status="completed") == 0


async def test_waits_pending_are_read_from_the_store_at_each_scrape(
    serve: Serve, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.call("delete_file", {"path": "notes.txt"}), Reply.text("Kept."))
    served = await serve(Careful())
    run = (await served.client.post("/threads/t/runs", json={"message": "Delete it"})).json()
    assert run["status"] == "waiting_for_approval"

    waiting = await scrape(served.client)
    operation = (await served.oracle.operations(thread_id="t"))[0]
    await served.client.post(f"/operations/{operation.id}/decision", json={"approve": False})
    settled = await scrape(served.client)

    assert value(waiting, "oracle_waits_pending", kind="approval") == 1
    assert value(waiting, "oracle_runs_total", status="waiting_for_approval") == 1
    assert value(settled, "oracle_waits_pending", kind="approval") == 0
    assert value(settled, "oracle_runs_total", status="completed") == 1


async def test_a_run_that_found_its_thread_held_records_how_long_it_waited(
    serve: Serve, fake_openai: FakeOpenAI
) -> None:
    served = await serve(limits=RunLimits(busy_wait=0.2))
    store = served.oracle.checkpointer
    assert await store.acquire("held", "another-process", 60)

    run = (await served.client.post("/threads/held/runs", json={"message": "Hi"})).json()

    samples = await scrape(served.client)
    assert "busy" in str(run)
    assert value(samples, "oracle_lease_wait_seconds_count") == 1
    assert value(samples, "oracle_lease_wait_seconds_bucket", le="0.1") == 0
    assert value(samples, "oracle_lease_wait_seconds_sum") >= 0.2


async def test_metrics_need_the_token_when_the_server_has_one(
    serve: Serve, fake_openai: FakeOpenAI
) -> None:
    served = await serve(tokens=("s3cret",))

    missing = await served.client.get("/metrics")
    wrong = await served.client.get("/metrics", headers={"Authorization": "Bearer nope"})
    samples = await scrape(served.client, Authorization="Bearer s3cret")

    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert value(samples, "oracle_waits_pending", kind="connection") == 0


async def test_without_a_token_metrics_answer_only_loopback_names(
    serve: Serve, fake_openai: FakeOpenAI
) -> None:
    served = await serve(host="metrics.example.com")

    response = await served.client.get("/metrics")

    assert response.status_code == 421


async def test_openmetrics_is_answered_when_the_scraper_asks_for_it(
    serve: Serve, fake_openai: FakeOpenAI
) -> None:
    served = await serve()

    response = await served.client.get(
        "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
    )

    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.rstrip().endswith("# EOF")


def test_without_prometheus_client_metrics_answer_503_saying_what_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['prometheus_client'] = None  # as if it were not installed\n"
        "from starlette.testclient import TestClient\n"
        "from oracle_core import Oracle\n"
        "from oracle_core.server import create_app\n"
        "from oracle_core.store.memory import MemoryCheckpointer\n"
        "oracle = Oracle(entry_points=False, model='demo', checkpointer=MemoryCheckpointer())\n"
        "with TestClient(create_app(oracle), base_url='http://127.0.0.1') as client:\n"
        "    health = client.get('/health')\n"
        "    response = client.get('/metrics')\n"
        "print(health.status_code, response.status_code, response.json()['error']['type'])\n"
        "print(response.json()['error']['message'])\n"
    )

    status, message = fresh_python(code).splitlines()[-2:]

    assert status == "200 503 metrics_unavailable"
    assert "pip install 'oracle-core-runtime[server]'" in message
