"""Shared fixtures."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from stores import KINDS, Clock, PgSchema, make_schema, opener
from support import SitePackages

from oracle_core import Oracle, Settings
from oracle_core.store import Checkpointer, MemoryCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI


@pytest.fixture(autouse=True)
def _logging_put_back() -> Iterator[None]:
    """The loggers as they were before the test, whatever the test configured.

    A server started in this process (``make_server``) applies ``oracle serve``'s logging
    configuration to the whole process: ``oracle_core`` stops propagating to the root logger
    and the root logger gets a handler of its own. pytest before 9.1 then captures none of
    the oracle's records in the tests that follow (``caplog`` is empty), so a test's outcome
    would depend on which tests ran before it on the same worker. The root logger's handlers
    are pytest's own too (one set each for setup, call and teardown): only those the test
    added are taken off.
    """
    root = logging.getLogger()
    kept = [
        (logger, logger.handlers[:], logger.level, logger.propagate, logger.disabled)
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    root_handlers, root_level = root.handlers[:], root.level
    yield
    for logger, handlers, level, propagate, disabled in kept:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate
        logger.disabled = disabled
    for handler in root.handlers[:]:
        if handler not in root_handlers:
            root.removeHandler(handler)
    root.setLevel(root_level)


@pytest.fixture(autouse=True)
def _telemetry_put_back() -> Iterator[None]:
    """OpenTelemetry's global tracer and meter providers as they were before the test.

    A command run in this process (``CliRunner``) with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set
    installs the oracle's providers for the whole process, and the API lets them be set
    only once: the tests that follow on the same worker would then trace through a provider
    they did not make (and export to a collector that is not there). The API's globals are
    put back; a provider the test installed gets nothing more (the oracle's exit hook shuts
    it down with the process).
    """
    trace = sys.modules.get("opentelemetry.trace")
    meters = sys.modules.get("opentelemetry.metrics._internal")
    kept = [
        (module, attribute, getattr(module, attribute), getattr(module, once)._done)
        for module, attribute, once in (
            (trace, "_TRACER_PROVIDER", "_TRACER_PROVIDER_SET_ONCE"),
            (meters, "_METER_PROVIDER", "_METER_PROVIDER_SET_ONCE"),
        )
        if module is not None
    ]
    yield
    for module, attribute, once in (
        (sys.modules.get("opentelemetry.trace"), "_TRACER_PROVIDER", "_TRACER_PROVIDER_SET_ONCE"),
        (
            sys.modules.get("opentelemetry.metrics._internal"),
            "_METER_PROVIDER",
            "_METER_PROVIDER_SET_ONCE",
        ),
    ):
        if module is None:
            continue
        before = next(((value, done) for m, a, value, done in kept if m is module), (None, False))
        if getattr(module, attribute) is before[0]:
            continue
        setattr(module, attribute, before[0])
        getattr(module, once)._done = before[1]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SitePackages]:
    """A fresh site-packages-like folder on ``sys.path`` for this test only."""
    root = tmp_path / "site-packages"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    packages = SitePackages(root)
    yield packages
    for module in packages.modules:
        sys.modules.pop(module, None)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """An OpenAI-compatible server on 127.0.0.1 that the test scripts."""
    with FakeOpenAI() as server:
        yield server


class MakeOracle(Protocol):
    def __call__(self, *plugins: object, **options: Any) -> Oracle: ...


@pytest.fixture
def make_oracle(fake_openai: FakeOpenAI, tmp_path: Path) -> Iterator[MakeOracle]:
    """Build oracles from plugins given in code, talking to ``fake_openai`` through litellm."""
    made: list[Oracle] = []

    def make(*plugins: object, **options: Any) -> Oracle:
        options.setdefault("checkpointer", MemoryCheckpointer())
        options.setdefault("model", fake_openai.model())
        options.setdefault("settings", Settings.from_env({"ORACLE_HOME": str(tmp_path / "home")}))
        oracle = Oracle(list(plugins), entry_points=False, **options)
        made.append(oracle)
        return oracle

    yield make
    for oracle in made:
        asyncio.run(oracle.close())


@pytest.fixture
def pg_schema() -> Iterator[PgSchema]:
    """A Postgres schema of this test's own (dropped after); skips when Postgres is down."""
    yield from make_schema()


@pytest.fixture
def clock() -> Clock:
    """The wall clock the stores of ``connect`` read."""
    return Clock()


@pytest.fixture(params=KINDS)
async def connect(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[Callable[[], Checkpointer]]:
    """Open the store under test again, as another process would (memory: the same one).

    Parametrized over every store (memory, SQLite, Postgres), so each test that asks for it
    is one case of the store conformance suite.
    """
    schema = request.getfixturevalue("pg_schema") if request.param == "postgres" else None
    make = opener(request.param, tmp_path, clock, schema)
    opened: list[Checkpointer] = []

    def connect() -> Checkpointer:
        store = make()
        opened.append(store)
        return store

    yield connect
    for store in opened:
        await store.close()


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """Where a counting tool writes one line a call (tests/waits_support.py)."""
    return tmp_path / "executions.log"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A SQLite store's file in the test's own folder."""
    return tmp_path / "oracle.db"
