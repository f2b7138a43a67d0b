"""Spans leaving the process: through the real OTLP/HTTP exporter to a loopback receiver that
decodes the protobuf, and an incoming ``traceparent`` on the HTTP API parenting the run."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "opentelemetry.sdk", reason="OpenTelemetry's SDK is not installed: pip install -e '.[otel]'"
)

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from conftest import MakeOracle
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from support import CodePlugin
from telemetry.test_tracing import Traced

from oracle_core.server import create_app
from oracle_core.server.serving import make_server
from oracle_core.telemetry.tracing import TracingObserver
from oracle_core.testing.openai_server import FakeOpenAI, Reply


class Receiver:
    """An OTLP/HTTP receiver on 127.0.0.1: decodes every export of spans and of metrics."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.metric_requests: list[ExportMetricsServiceRequest] = []
        self.paths: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.endswith("/v1/metrics"):
                    metrics = ExportMetricsServiceRequest()
                    metrics.ParseFromString(body)
                    owner.metric_requests.append(metrics)
                else:
                    message = ExportTraceServiceRequest()
                    message.ParseFromString(body)
                    owner.requests.append(message)
                owner.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def spans(self) -> list[Any]:
        return [
            span
            for request in self.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]

    def metric_names(self) -> set[str]:
        return {
            metric.name
            for request in self.metric_requests
            for resource in request.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.close()


def test_spans_go_through_the_real_otlp_http_exporter(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, receiver: Receiver
) -> None:
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{receiver.port}/v1/traces")
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    oracle = make_oracle(
        CodePlugin("notes", visibility="always"), observers=[TracingObserver(provider)]
    )
    fake_openai.script(Reply.call("notes_tool", {"text": "x"}), Reply.text("done"))

    result = oracle.run_sync("t", "hi")
    provider.shutdown()

    assert result.status == "completed"
    spans = receiver.spans()
    assert sorted(s.name for s in spans) == [
        "chat fake-model",
        "chat fake-model",
        "execute_tool notes_tool",
        "invoke_agent oracle",
    ]
    assert set(receiver.paths) == {"/v1/traces"}
    run = next(s for s in spans if s.name.startswith("invoke_agent"))
    attrs = {a.key: a.value for a in run.attributes}
    assert attrs["gen_ai.operation.name"].string_value == "invoke_agent"
    assert attrs["oracle.run.id"].string_value == result.run_id
    for span in spans:
        assert span.trace_id == run.trace_id
        if span is not run:
            assert span.parent_span_id == run.span_id


CHILD = textwrap.dedent(
    """
    import asyncio, os, sys, tempfile
    from oracle_core import Oracle, Settings
    from oracle_core.store import MemoryCheckpointer
    from oracle_core.telemetry.otel_setup import configure_from_env
    from oracle_core.testing.scripted import ScriptedModel

    providers = configure_from_env(os.environ)
    assert providers.tracer is not None
    assert configure_from_env(os.environ).tracer is None  # never replaces a provider already set
    oracle = Oracle(
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": tempfile.mkdtemp()}),
        model=ScriptedModel("openai/gpt-test").reply_text("hello"),
        checkpointer=MemoryCheckpointer(),
    )
    result = oracle.run_sync("t", "hi")
    asyncio.run(oracle.close())
    assert providers.shutdown(timeout=60)  # everything sent (the exit bound is tested elsewhere)
    print(result.run_id)
    """
)


@pytest.mark.slow
def test_the_oracles_own_setup_exports_spans_and_metrics_from_the_standard_variables(
    receiver: Receiver,
) -> None:
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.port}",
        "OTEL_SERVICE_NAME": "oracle-test",
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip().splitlines()[-1]
    spans = receiver.spans()
    assert sorted(s.name for s in spans) == ["chat gpt-test", "invoke_agent oracle"]
    resource = receiver.requests[0].resource_spans[0].resource
    names = {a.key: a.value.string_value for a in resource.attributes}
    assert names["service.name"] == "oracle-test"
    chat = next(s for s in spans if s.name.startswith("chat"))
    attrs = {a.key: a.value for a in chat.attributes}
    assert attrs["gen_ai.provider.name"].string_value == "openai"
    assert attrs["gen_ai.request.model"].string_value == "gpt-test"
    run = next(s for s in spans if s.name.startswith("invoke_agent"))
    assert {a.key: a.value.string_value for a in run.attributes}["oracle.run.id"] == run_id
    # An OTLP endpoint means otlp for metrics too, as the SDK's OTEL_METRICS_EXPORTER default.
    assert {"oracle.runs", "oracle.run.duration"} <= receiver.metric_names()


def serve_live(app: Any) -> tuple[Any, threading.Thread, int]:
    """``app`` served by ``oracle serve``'s uvicorn server in a thread on 127.0.0.1."""
    serving = threading.Event()
    server = make_server(app, None, log_level="warning", on_serving=serving.set)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert serving.wait(30), "uvicorn did not start"
    return server, thread, sock.getsockname()[1]


TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.mark.parametrize("stream", [False, True])
def test_an_incoming_traceparent_is_the_parent_of_the_run_span(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, stream: bool, tmp_path: Path
) -> None:
    traced = Traced()
    oracle = make_oracle(CodePlugin("notes", visibility="always"), observers=[traced.observer()])
    fake_openai.script(Reply.call("notes_tool", {"text": "x"}), Reply.text("done"))
    server, thread, port = serve_live(create_app(oracle))
    try:
        headers = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
        body = {"message": "hi", "stream": stream}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            response = client.post("/threads/t/runs", json=body, headers=headers)
            assert response.status_code == 200, response.text
            if not stream:
                assert response.json()["status"] == "completed"
            else:
                assert '"done"' in response.text
            # Without the header, the run is in its own trace again.
            fake_openai.script(Reply.text("again"))
            client.post("/threads/u/runs", json={"message": "hi"})
    finally:
        server.should_exit = True
        thread.join(60)

    runs = sorted(traced.named("invoke_agent"), key=lambda s: s.start_time or 0)
    assert len(runs) == 2
    first, second = runs
    assert format(first.context.trace_id, "032x") == TRACE_ID
    assert first.parent is not None and format(first.parent.span_id, "016x") == PARENT_ID
    assert first.parent.is_remote
    assert [dict(link.attributes or {}).get("oracle.link") for link in first.links] == ["run"]
    in_caller = [s.name for s in traced.spans if s.context.trace_id == first.context.trace_id]
    assert sorted(in_caller) == [
        "chat fake-model", "chat fake-model", "execute_tool notes_tool", "invoke_agent oracle"
    ]  # fmt: skip
    assert format(second.context.trace_id, "032x") != TRACE_ID
    assert second.parent is not None and second.parent.span_id != int(PARENT_ID, 16)


WAITING_CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from waits_support import CallsThenText, Kit, build_oracle, counting_tool
    from oracle_core.telemetry.tracing import TracingObserver

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    db = Path(sys.argv[1])
    model = CallsThenText([("delete", {"path": "a.txt"})])
    oracle = build_oracle(
        db, Kit(counting_tool(db.parent / "calls.log")), model=model,
        observers=[TracingObserver(provider)],
    )

    async def main():
        async with oracle:
            return await oracle.run("t", "please delete a.txt")

    result = asyncio.run(main())
    run = next(s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent"))
    print(json.dumps({
        "status": result.status, "run_id": result.run_id,
        "operation": result.operations[0].id,
        "trace_id": format(run.context.trace_id, "032x"),
        "span_id": format(run.context.span_id, "016x"),
    }))
    """
)


@pytest.mark.slow
def test_a_run_resumed_in_another_process_is_in_the_trace_of_the_run_that_waited(
    tmp_path: Path,
) -> None:
    from waits_support import Kit, build_oracle, counting_tool

    db = tmp_path / "oracle.db"
    tests = str(Path(__file__).parents[1])
    done = subprocess.run(
        [sys.executable, "-c", WAITING_CHILD, str(db), tests],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    waited = json.loads(done.stdout.strip().splitlines()[-1])
    assert waited["status"] == "waiting_for_approval"

    traced = Traced()
    oracle = build_oracle(
        db, Kit(counting_tool(tmp_path / "calls.log")), observers=[traced.observer()]
    )

    async def decide() -> Any:
        async with oracle:  # no incoming traceparent: the run id alone names the trace
            return await oracle.decide(waited["operation"], approve=True)

    result = asyncio.run(decide())
    assert result.status == "completed", result.error

    resumed = traced.one("invoke_agent")
    assert dict(resumed.attributes or {})["oracle.run.id"] == waited["run_id"]
    assert format(resumed.context.trace_id, "032x") == waited["trace_id"]
    assert format(resumed.context.span_id, "016x") != waited["span_id"]
    decision = traced.one("resume approval")
    assert dict(decision.attributes or {})["oracle.operation.decision"] == "approved"
