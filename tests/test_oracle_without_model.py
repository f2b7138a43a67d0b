"""An oracle built in code with no model set says so on its first model call: the offline
demo model answers with canned text and calls tools, which a library user who forgot
``model=`` must not mistake for their model. Naming the demo model (``model="demo"``,
``ORACLE_MODEL=demo``) is quiet, and so is an oracle that never calls its model."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from oracle_core import Oracle
from oracle_core.settings import Settings


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "oracle_core" and r.levelno == logging.WARNING
    ]


def build(tmp_path: Path, **kwargs: object) -> Oracle:
    env = {"ORACLE_HOME": str(tmp_path), **kwargs.pop("env", {})}  # type: ignore[dict-item]
    return Oracle(entry_points=False, settings=Settings.from_env(env), **kwargs)  # type: ignore[arg-type]


def test_no_model_warns_once_naming_oracle_model_and_model_argument(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "oracle_core")
    with build(tmp_path) as oracle:
        assert oracle.model.name == "demo"
        oracle.run_sync("t", "hello")
        oracle.run_sync("t", "and again")
    said = warnings_of(caplog)
    assert len(said) == 1, said
    assert "ORACLE_MODEL" in said[0] and "model=" in said[0] and "demo" in said[0]


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_the_demo_model_named_explicitly_is_quiet(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    caplog.set_level(logging.WARNING, "oracle_core")
    if how == "argument":
        oracle = build(tmp_path, model="demo")
    else:
        oracle = build(tmp_path, env={"ORACLE_MODEL": "demo"})
    with oracle:
        oracle.run_sync("t", "hello")
    assert warnings_of(caplog) == []


def test_an_oracle_that_never_calls_its_model_says_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "oracle_core")
    oracle = build(tmp_path)
    assert oracle.model.name == "demo"  # built, as oracle mcp and oracle prompt build it
    assert warnings_of(caplog) == []
