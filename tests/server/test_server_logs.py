"""Where ``oracle serve`` logs go: every log to standard error, each line naming its logger."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support import CodePlugin

from oracle_core.server import create_app
from oracle_core.server.logging_config import server_log_config
from oracle_core.server.serving import make_server

LOG_SOME = """
import logging, logging.config, sys
from oracle_core.server.logging_config import server_log_config
logging.config.dictConfig(server_log_config(sys.argv[1]))
logging.getLogger("oracle_core.run").info("a run step")
logging.getLogger("oracle_core.run").debug("a detail")
logging.getLogger("oracle_plugin_weather").warning("a plugin warning")
logging.getLogger("oracle_plugin_weather").info("plugin chatter")
logging.getLogger("uvicorn.error").info("uvicorn says")
logging.getLogger("uvicorn.access").info(
    '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", "/health", "1.1", 200
)
"""


def logged(level: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LOG_SOME, level], capture_output=True, text=True, check=True
    )


@pytest.mark.slow  # a subprocess
def test_the_oracles_plugins_and_uvicorns_logs_all_go_to_stderr() -> None:
    result = logged("info")

    assert result.stdout == ""  # kept for the start-up banner
    lines = result.stderr.splitlines()
    assert lines == [
        "INFO:     oracle_core.run: a run step",
        "WARNING:  oracle_plugin_weather: a plugin warning",
        "INFO:     uvicorn says",  # uvicorn's own lines as uvicorn writes them
        'INFO:     127.0.0.1:5 - "GET /health HTTP/1.1" 200 OK',
    ]


@pytest.mark.slow  # a subprocess
def test_the_log_level_sets_the_oracles_loggers_too() -> None:
    assert "oracle_core.run: a detail" in logged("debug").stderr
    assert "a run step" not in logged("warning").stderr


def test_oracle_serve_uses_that_configuration(make_oracle) -> None:
    app = create_app(make_oracle(CodePlugin("weather")))

    server = make_server(app, log_level="debug")

    assert server.config.log_config == server_log_config("debug")
