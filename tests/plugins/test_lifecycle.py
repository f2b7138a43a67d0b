"""Startup in dependency order, shutdown in reverse; a plugin that fails to start is left out."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from starlette.applications import Starlette

from oracle_core import (
    DependencyError,
    PluginLoadError,
    PluginManifest,
    Route,
    StrictPluginError,
    hookimpl,
)
from oracle_core.authoring.host import OracleHandle, PluginHost, PluginStates
from oracle_core.plugins.lifecycle import Lifecycle
from oracle_core.plugins.loader import Candidate, assemble, new_plugin_manager, source_for_object
from oracle_core.plugins.registry import Registry
from oracle_core.server.auth import BearerAuth
from oracle_core.server.errors import install_error_handlers
from oracle_core.server.plugin_routes import plugin_routes
from oracle_core.settings import Settings

HANDLE = cast(OracleHandle, object())
"""What the hooks are handed (the lifecycle passes it through untouched)."""


class Lifecycled:
    """A plugin that records its startup and shutdown in a shared list."""

    def __init__(self, name: str, events: list[str], *, depends_on: tuple[str, ...] = ()) -> None:
        self.name, self.events, self.depends_on = name, events, list(depends_on)
        self.handed: list[object] = []

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name=self.name,
            summary=f"The {self.name} plugin.",
            when_to_use=[f"the user mentions {self.name}"],
            depends_on=self.depends_on,
        )

    @hookimpl
    def oracle_startup(self, oracle: OracleHandle) -> None:
        self.handed.append(oracle)
        self.events.append(f"start {self.name}")

    @hookimpl
    def oracle_shutdown(self) -> None:
        self.events.append(f"stop {self.name}")


class FailsToStart(Lifecycled):
    @hookimpl
    def oracle_startup(self) -> None:
        raise RuntimeError("no database")


class HangsSync(Lifecycled):
    def __init__(self, name: str, events: list[str], release: threading.Event) -> None:
        super().__init__(name, events)
        self.release = release

    @hookimpl
    def oracle_startup(self) -> None:
        self.release.wait()


class HangsAsync(Lifecycled):
    @hookimpl
    async def oracle_startup(self) -> None:
        await asyncio.Event().wait()


class StartsAsync(Lifecycled):
    @hookimpl
    async def oracle_startup(self, oracle: OracleHandle) -> None:
        await asyncio.sleep(0)
        self.events.append(f"start {self.name} (async)")


class FailsToStop(Lifecycled):
    @hookimpl
    def oracle_shutdown(self) -> None:
        raise RuntimeError("already closed")


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown, so a hung hook's abandoned thread can end."""
    event = threading.Event()
    yield event
    event.set()


def lifecycle(
    tmp_path: Path, *plugins: object, timeout: float = 5.0, strict: bool = False, **env: str
) -> tuple[Lifecycle, Registry]:
    manager = new_plugin_manager()
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path), **env})
    registry = assemble(
        [Candidate(source_for_object(p), p) for p in plugins],
        manager=manager,
        host=PluginHost(settings, PluginStates()),
    )
    assert registry.failures == []
    return Lifecycle(manager, registry, timeout=timeout, strict=strict), registry


async def test_startup_runs_dependencies_first_then_in_registration_order(tmp_path: Path) -> None:
    events: list[str] = []
    plugins = [
        Lifecycled("b", events, depends_on=("a",)),
        Lifecycled("c", events),
        Lifecycled("a", events),
    ]
    cycle, _ = lifecycle(tmp_path, *plugins)

    started = await cycle.start(HANDLE)

    assert events == ["start c", "start a", "start b"]
    assert list(started.plugins) == ["b", "c", "a"]
    assert started.failures == []


async def test_startup_hooks_get_the_oracle_handle(tmp_path: Path) -> None:
    plugin = Lifecycled("a", [])
    cycle, _ = lifecycle(tmp_path, plugin)

    await cycle.start(HANDLE)

    assert plugin.handed == [HANDLE]


async def test_sync_and_async_startup_hooks_both_run(tmp_path: Path) -> None:
    events: list[str] = []
    cycle, _ = lifecycle(tmp_path, StartsAsync("a", events), Lifecycled("b", events))

    await cycle.start(HANDLE)

    assert events == ["start a (async)", "start b"]


async def test_shutdown_runs_in_reverse_of_startup(tmp_path: Path) -> None:
    events: list[str] = []
    plugins = [Lifecycled("b", events, depends_on=("a",)), Lifecycled("a", events)]
    cycle, _ = lifecycle(tmp_path, *plugins)
    await cycle.start(HANDLE)

    await cycle.stop(HANDLE)

    assert events == ["start a", "start b", "stop b", "stop a"]


async def test_a_startup_hook_that_raises_leaves_its_plugin_and_dependents_out(
    tmp_path: Path,
) -> None:
    events: list[str] = []
    plugins = [
        FailsToStart("db", events),
        Lifecycled("reports", events, depends_on=("db",)),
        Lifecycled("clock", events),
    ]
    cycle, registry = lifecycle(tmp_path, *plugins)

    started = await cycle.start(HANDLE)
    await cycle.stop(HANDLE)

    assert list(started.plugins) == ["clock"]
    db, reports = started.failures
    assert isinstance(db, PluginLoadError)
    assert (db.plugin, str(db)) == (
        "db",
        "hook oracle_startup raised RuntimeError: no database: it is left out",
    )
    assert isinstance(reports, DependencyError)
    assert reports.plugin == "reports"
    assert "depends_on names 'db', whose oracle_startup failed" in str(reports)
    assert events == ["start clock", "stop clock"]
    assert list(registry.plugins) == ["db", "reports", "clock"]  # the input is unchanged


async def test_a_sync_startup_hook_that_hangs_is_timed_out_and_the_rest_starts(
    tmp_path: Path, release: threading.Event
) -> None:
    events: list[str] = []
    cycle, _ = lifecycle(
        tmp_path, HangsSync("stuck", events, release), Lifecycled("clock", events), timeout=0.2
    )

    started = await cycle.start(HANDLE)

    assert list(started.plugins) == ["clock"]
    [failure] = started.failures
    assert failure.plugin == "stuck"
    assert "hook oracle_startup did not return within 0.2 s at startup" in str(failure)
    assert events == ["start clock"]


async def test_an_async_startup_hook_that_hangs_is_timed_out_and_the_rest_starts(
    tmp_path: Path,
) -> None:
    events: list[str] = []
    cycle, _ = lifecycle(
        tmp_path, HangsAsync("stuck", events), Lifecycled("clock", events), timeout=0.2
    )

    started = await cycle.start(HANDLE)

    assert list(started.plugins) == ["clock"]
    assert "hook oracle_startup did not return within 0.2 s" in str(started.failures[0])


async def test_strict_mode_makes_a_startup_failure_fatal_after_stopping_what_started(
    tmp_path: Path,
) -> None:
    events: list[str] = []
    cycle, _ = lifecycle(
        tmp_path, Lifecycled("clock", events), FailsToStart("db", events), strict=True
    )

    with pytest.raises(StrictPluginError) as caught:
        await cycle.start(HANDLE)

    assert "db: hook oracle_startup raised RuntimeError: no database" in str(caught.value)
    assert events == ["start clock", "stop clock"]


async def test_a_failing_shutdown_is_logged_and_the_others_still_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[str] = []
    cycle, _ = lifecycle(tmp_path, Lifecycled("a", events), FailsToStop("b", events))
    await cycle.start(HANDLE)

    with caplog.at_level(logging.ERROR, logger="oracle_core.plugins"):
        await cycle.stop(HANDLE)

    assert events == ["start a", "start b", "stop a"]
    assert "plugin 'b': oracle_shutdown failed: RuntimeError: already closed" in caplog.text


async def test_a_failing_startup_is_logged_in_one_line_with_its_traceback_at_debug(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cycle, _ = lifecycle(tmp_path, FailsToStart("db", []), Lifecycled("clock", []))

    with caplog.at_level(logging.DEBUG, logger="oracle_core.plugins"):
        await cycle.start(HANDLE)

    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [(r.name, r.getMessage()) for r in errors] == [
        (
            "oracle_core.plugins",
            "plugin 'db': hook oracle_startup raised RuntimeError: no database: it is left out",
        )
    ]
    assert errors[0].exc_info is None  # one line; the traceback is the DEBUG record's
    (traced,) = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert "'db'" in traced.getMessage()
    assert "no database" in caplog.text.split(traced.getMessage(), 1)[1]


async def test_trace_plugins_prints_every_hook_call_with_its_plugin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cycle, _ = lifecycle(tmp_path, Lifecycled("a", []), ORACLE_TRACE_PLUGINS="1")
    await cycle.start(HANDLE)
    await cycle.stop(HANDLE)

    assert capsys.readouterr().err.splitlines() == [
        "oracle: hook oracle_manifest -> Lifecycled",
        "oracle: hook oracle_startup -> a",
        "oracle: hook oracle_shutdown -> a",
    ]


class Served(Lifecycled):
    @hookimpl
    def oracle_routes(self) -> list[Route]:
        async def status(request: Any) -> dict[str, str]:
            return {"plugin": self.name}

        return [Route("/status", status)]


class ServedButFailsToStart(Served):
    @hookimpl
    def oracle_startup(self) -> None:
        raise RuntimeError("no database")


async def test_routes_of_a_plugin_that_did_not_start_answer_503_naming_it(
    tmp_path: Path,
) -> None:
    cycle, assembled = lifecycle(tmp_path, Served("ok", []), ServedButFailsToStart("db", []))
    app = Starlette()
    install_error_handlers(app)
    app.router.routes.extend(plugin_routes(assembled, BearerAuth(), []).routes)
    app.state.oracle = type("Started", (), {"registry": await cycle.start(HANDLE)})()

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test"
    ) as client:
        ok = await client.get("/plugins/ok/status")
        db = await client.get("/plugins/db/status")

    assert (ok.status_code, ok.json()) == (200, {"plugin": "ok"})
    assert db.status_code == 503
    assert "plugin 'db' is not running" in db.text
