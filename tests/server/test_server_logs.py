"""What ``oracle serve`` logs: every line to standard error, with its time and level, as text
or JSON; each request's id (``X-Request-ID``) and each run's id on the lines written for
them; one line per finished run."""

from __future__ import annotations

import json
import logging
import random
import re
import string
import subprocess
import sys

import pytest
from support import CodePlugin

from oracle_core import PluginManifest, Tool, hookimpl, tool
from oracle_core.server import create_app
from oracle_core.server.logging_config import server_log_config
from oracle_core.server.serving import make_server
from oracle_core.telemetry.log_context import LogContextFilter
from oracle_core.testing.openai_server import FakeOpenAI, Reply

LOG_SOME = """
import logging, logging.config, sys
from oracle_core.server.logging_config import server_log_config
from oracle_core.telemetry.log_context import REQUEST_ID
logging.config.dictConfig(server_log_config(sys.argv[1], sys.argv[2]))
logging.getLogger("oracle_core.run").info("a run step")
logging.getLogger("oracle_core.run").debug("a detail")
logging.getLogger("oracle_plugin_weather").warning("a plugin warning")
logging.getLogger("oracle_plugin_weather").info("plugin chatter")
logging.getLogger("uvicorn.error").info("uvicorn says")
REQUEST_ID.set("req-7")
logging.getLogger("uvicorn.access").info(
    '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", "/health", "1.1", 200
)
try:
    1 / 0
except ZeroDivisionError:
    logging.getLogger("oracle_core.tools").exception("a tool raised")
"""

TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d"
"""ISO 8601 to the millisecond, with the UTC offset."""


def logged(level: str, log_format: str = "text") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LOG_SOME, level, log_format],
        capture_output=True, text=True, check=True,
    )  # fmt: skip


@pytest.mark.slow  # a subprocess
def test_every_line_goes_to_stderr_with_its_time_level_and_logger() -> None:
    result = logged("info")

    assert result.stdout == ""  # kept for the start-up banner
    lines = result.stderr.splitlines()
    expected = [
        r"INFO    oracle_core\.run: a run step",
        r"WARNING oracle_plugin_weather: a plugin warning",
        r"INFO    uvicorn: uvicorn says",
        r'INFO    uvicorn\.access: 127\.0\.0\.1:5 - "GET /health HTTP/1\.1" 200 request_id=req-7',
        r"ERROR   oracle_core\.tools: a tool raised request_id=req-7",
    ]
    for line, pattern in zip(lines, expected, strict=False):
        assert re.fullmatch(f"{TIME} {pattern}", line), line
    assert lines[len(expected)] == "Traceback (most recent call last):"
    assert lines[-1] == "ZeroDivisionError: division by zero"


@pytest.mark.slow  # a subprocess
def test_the_json_format_writes_one_object_a_line() -> None:
    result = logged("info", "json")

    entries = [json.loads(line) for line in result.stderr.splitlines()]
    assert [(e["level"], e["logger"]) for e in entries] == [
        ("INFO", "oracle_core.run"),
        ("WARNING", "oracle_plugin_weather"),
        ("INFO", "uvicorn"),
        ("INFO", "uvicorn.access"),
        ("ERROR", "oracle_core.tools"),
    ]
    assert all(re.fullmatch(TIME, e["time"]) for e in entries)
    access = entries[3]
    assert access["request_id"] == "req-7"
    assert (access["method"], access["path"], access["status"]) == ("GET", "/health", 200)
    assert access["client"] == "127.0.0.1:5"
    assert entries[4]["exception"].endswith("ZeroDivisionError: division by zero")
    assert "request_id" not in entries[0]  # only the ids that are set


@pytest.mark.slow  # a subprocess
def test_the_log_level_sets_the_oracles_loggers_too() -> None:
    assert "oracle_core.run: a detail" in logged("debug").stderr
    assert "a run step" not in logged("warning").stderr


def test_oracle_serve_uses_that_configuration(make_oracle) -> None:
    app = create_app(make_oracle(CodePlugin("weather")))

    server = make_server(app, log_level="debug", log_format="json")

    assert server.config.log_config == server_log_config("debug", "json")


def test_an_unknown_log_format_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="'xml' is not one of: text, json"):
        server_log_config("info", "xml")  # type: ignore[arg-type]


# -- request and run ids, in process ---------------------------------------------------------

NOTES = logging.getLogger("oracle_plugin_noisy")


class Noisy:
    """A plugin whose tools log: one sync (a worker thread), one async (the event loop)."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="noisy", summary="Logs notes.", when_to_use=["notes"], visibility="always"
        )

    @hookimpl
    def oracle_tools(self) -> list[Tool]:
        @tool
        def sync_note(text: str) -> str:
            """Log a note from a worker thread."""
            NOTES.warning("sync note %s", text)
            return "noted"

        @tool
        async def async_note(text: str) -> str:
            """Log a note on the event loop."""
            NOTES.warning("async note %s", text)
            return "noted"

        return [sync_note, async_note]


def with_ids(caplog: pytest.LogCaptureFixture) -> None:
    """Give the test's captured records their ids, as ``oracle serve``'s handler does."""
    caplog.handler.addFilter(LogContextFilter())
    caplog.set_level(logging.INFO)


async def test_every_line_of_a_run_names_the_request_the_run_and_the_thread(
    serve, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    with_ids(caplog)
    served = await serve(Noisy())
    fake_openai.script(
        Reply.calls(("sync_note", {"text": "a"}), ("async_note", {"text": "b"})), Reply.text("ok")
    )

    response = await served.client.post(
        "/threads/t1/runs", json={"message": "note it"}, headers={"X-Request-ID": "req-42"}
    )

    assert response.status_code == 200
    assert response.headers["x-request-id"] == "req-42"
    run_id = response.json()["run_id"]
    notes = [r for r in caplog.records if r.name == NOTES.name]
    assert sorted(r.getMessage() for r in notes) == ["async note b", "sync note a"]
    for record in notes:
        assert (record.request_id, record.run_id, record.thread_id) == ("req-42", run_id, "t1")  # type: ignore[attr-defined]


async def test_each_finished_run_is_one_line_with_its_status_duration_and_tokens(
    serve, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    with_ids(caplog)
    served = await serve(Noisy())
    fake_openai.script(Reply.text("first"), Reply.error(400, "bad request from the provider"))

    done = (await served.client.post("/threads/t2/runs", json={"message": "hi"})).json()
    failed = (await served.client.post("/threads/t2/runs", json={"message": "again"})).json()

    lines = [r for r in caplog.records if r.name == "oracle_core.runs"]
    assert [(r.levelname, r.status, r.run_id) for r in lines] == [  # type: ignore[attr-defined]
        ("INFO", "completed", done["run_id"]),
        ("WARNING", "failed", failed["run_id"]),
    ]
    first = lines[0]
    assert first.total_tokens == done["usage"]["total_tokens"] > 0  # type: ignore[attr-defined]
    assert first.prompt_tokens == done["usage"]["prompt_tokens"]  # type: ignore[attr-defined]
    assert first.duration_seconds >= 0  # type: ignore[attr-defined]
    assert first.thread_id == "t2"  # type: ignore[attr-defined]
    message = first.getMessage()
    assert message.startswith(f"run {done['run_id']} on thread t2 completed in ")
    assert f"{done['usage']['total_tokens']} tokens" in message
    # The error's text may echo the prompt: the line names its type and a fixed reason.
    assert lines[1].getMessage().endswith(": ModelError: the model call failed")
    assert "bad request from the provider" not in lines[1].getMessage()


def _good_id(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits + "._:@/+=-"
    first = rng.choice(string.ascii_letters + string.digits)
    return first + "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 128)))


def _bad_id(rng: random.Random) -> bytes:
    good = _good_id(rng).encode()
    cut = rng.randrange(len(good) + 1)
    kind = rng.choice(["control", "space", "quote", "long", "latin1", "leading", "empty"])
    if kind == "control":
        return good[:cut] + bytes([rng.choice([*range(0, 32), 127])]) + good[cut:]
    if kind == "space":
        return good[:cut] + b" " + good[cut:]
    if kind == "quote":
        return good[:cut] + rng.choice([b'"', b"'", b"\\", b"<", b"{"]) + good[cut:]
    if kind == "long":
        return good + b"a" * (129 - len(good) + rng.randrange(50))
    if kind == "latin1":
        return good[:cut] + bytes([rng.randrange(128, 256)]) + good[cut:]
    if kind == "leading":
        return rng.choice([b"-", b".", b"/", b"="]) + good
    return b""


@pytest.mark.parametrize("seed", range(4))
async def test_a_plain_request_id_is_kept_and_any_other_is_replaced_by_a_new_one(
    serve, seed: int
) -> None:
    rng = random.Random(seed)
    served = await serve(CodePlugin("weather"))
    for _ in range(25):
        good = _good_id(rng)
        kept = await served.client.get("/health", headers=[(b"x-request-id", good.encode())])
        assert kept.headers["x-request-id"] == good

        bad = _bad_id(rng)
        replaced = await served.client.get("/health", headers=[(b"x-request-id", bad)])
        assert re.fullmatch(r"[0-9a-f]{32}", replaced.headers["x-request-id"]), bad


async def test_a_request_without_an_id_gets_a_new_one_each_time(serve) -> None:
    served = await serve(CodePlugin("weather"))

    ids = {(await served.client.get("/health")).headers["x-request-id"] for _ in range(3)}
    refused = await served.client.get("/health", headers={"Host": "evil.example"})

    assert len(ids) == 3 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert refused.status_code == 421 and "x-request-id" in refused.headers
