"""The standard exporter variables, as the OpenTelemetry SDK reads them (``otlp``, ``console``,
``none``), and a collector that is down never holding up the end of a command.

Each test runs ``oracle ask`` as a process against the scripted model over HTTP.
"""

from __future__ import annotations

import pytest

pytest.importorskip(
    "opentelemetry.sdk", reason="OpenTelemetry's SDK is not installed: pip install -e '.[otel]'"
)

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from oracle_core.telemetry.otel_exit import EXIT_SECONDS
from oracle_core.testing.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # each test starts `oracle ask`

MARGIN = 0.75
"""What the rest of a process's exit may take on a busy machine, beyond the flush bound."""


def ask(tmp_path: Path, fake: FakeOpenAI, **otel: str) -> subprocess.Popen[str]:
    """Start ``oracle ask hi`` with the ``OTEL_*`` variables ``otel`` and no others."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "OPENAI_", "OTEL_"))}
    env.update(
        ORACLE_HOME=str(tmp_path), ORACLE_LOAD_PLUGINS="", ORACLE_MODEL="openai/fake-model",
        ORACLE_API_BASE=fake.url, OPENAI_API_KEY="sk-fake", **otel,
    )  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-m", "oracle_core", "ask", "hi"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def finished(child: subprocess.Popen[str]) -> tuple[str, str]:
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    return out, err


def test_console_prints_each_span_on_stderr_and_leaves_stdout_to_the_answer(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Hello there."))

    out, err = finished(ask(tmp_path, fake_openai, OTEL_TRACES_EXPORTER="console"))

    assert out == "Hello there.\n"
    assert '"name": "invoke_agent oracle"' in err
    assert '"name": "chat fake-model"' in err
    assert "not supported" not in err and "does not know" not in err


def test_console_metrics_print_the_oracles_instruments_at_exit(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Hello there."))

    out, err = finished(ask(tmp_path, fake_openai, OTEL_METRICS_EXPORTER="console"))

    assert out == "Hello there.\n"
    assert '"name": "oracle.runs"' in err
    assert '"name": "oracle.tokens"' in err
    assert '"name": "invoke_agent oracle"' not in err  # traces were not asked for


def test_none_exports_nothing_even_with_an_endpoint(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Hello there."))
    listener = socket.create_server(("127.0.0.1", 0))  # a collector that would be seen
    listener.settimeout(0)
    endpoint = f"http://127.0.0.1:{listener.getsockname()[1]}"

    off = {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}
    out, err = finished(ask(tmp_path, fake_openai, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, **off))

    assert out == "Hello there.\n" and err == ""
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody connected
    listener.close()


def test_an_unknown_exporter_is_named_with_what_is_accepted(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Hello there."))

    out, err = finished(ask(tmp_path, fake_openai, OTEL_TRACES_EXPORTER="zipkin,console"))

    assert out == "Hello there.\n"
    assert "OTEL_TRACES_EXPORTER=zipkin,console" in err
    assert "'zipkin'" in err and "otlp (over HTTP), console or none" in err
    assert '"name": "invoke_agent oracle"' in err  # the known one still exports


@pytest.fixture
def refusing() -> Iterator[str]:
    """An endpoint on a port nothing listens on: every connection is refused."""
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    yield f"http://127.0.0.1:{port}"


@pytest.fixture
def silent() -> Iterator[str]:
    """An endpoint that accepts connections (the kernel's backlog) and never answers."""
    sock = socket.create_server(("127.0.0.1", 0), backlog=64)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


@pytest.mark.parametrize("collector", ["refusing", "silent"])
def test_a_collector_that_is_down_delays_the_exit_by_at_most_the_bound(
    tmp_path: Path, fake_openai: FakeOpenAI, collector: str, request: pytest.FixtureRequest
) -> None:
    endpoint: str = request.getfixturevalue(collector)
    fake_openai.script(Reply.text("Hello there."))
    child = ask(tmp_path, fake_openai, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)
    assert child.stdout is not None

    assert child.stdout.readline() == "Hello there.\n"
    answered = time.monotonic()
    _, err = child.communicate(timeout=120)
    took = time.monotonic() - answered

    assert child.returncode == 0, err
    assert took < EXIT_SECONDS + MARGIN, f"the exit took {took:.2f} s after the answer"
    assert "dropped" in err and "OTEL_EXPORTER_OTLP_ENDPOINT" in err
