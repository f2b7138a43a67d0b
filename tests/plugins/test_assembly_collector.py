"""An oracle assembles with fewer garbage collections, in the library as in the CLI, and the
application's own collector thresholds come back after (plugins/collector.py)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import CodePlugin

from oracle_core import Oracle, PluginManifest, Settings, StrictPluginError, hookimpl
from oracle_core.plugins.collector import ASSEMBLY_GC_THRESHOLD


class Watching(CodePlugin):
    """Records the collector's threshold while its manifest hook runs (during assembly)."""

    def __init__(self, name: str, gate: threading.Barrier | None = None) -> None:
        super().__init__(name)
        self.seen: tuple[int, int, int] | None = None
        self.gate = gate

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        self.seen = gc.get_threshold()
        if self.gate is not None:
            self.gate.wait(timeout=30)  # both assemblies are under way at once
        return super().oracle_manifest()


@pytest.fixture
def app_threshold() -> Iterator[tuple[int, int, int]]:
    """An application's own thresholds, put back after the test."""
    before = gc.get_threshold()
    gc.set_threshold(900, 11, 12)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def _build(tmp_path: Path, *plugins: object) -> Oracle:
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path)})
    return Oracle(list(plugins), entry_points=False, settings=settings, model="demo")


def test_the_library_assembles_with_fewer_collections_and_restores_the_thresholds(
    tmp_path: Path, app_threshold: tuple[int, int, int]
) -> None:
    plugin = Watching("watched")

    _build(tmp_path, plugin)

    assert plugin.seen == (ASSEMBLY_GC_THRESHOLD, 11, 12)
    assert gc.get_threshold() == app_threshold


def test_an_assembly_that_fails_restores_the_thresholds(
    tmp_path: Path, app_threshold: tuple[int, int, int]
) -> None:
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path), "ORACLE_STRICT_PLUGINS": "1"})

    class Broken(CodePlugin):
        @hookimpl
        def oracle_manifest(self) -> PluginManifest:
            raise RuntimeError("no manifest")

    with pytest.raises(StrictPluginError, match="no manifest"):
        Oracle([Broken("broken")], entry_points=False, settings=settings, model="demo")

    assert gc.get_threshold() == app_threshold


def test_two_threads_assembling_at_once_leave_the_applications_thresholds(
    tmp_path: Path, app_threshold: tuple[int, int, int]
) -> None:
    gate = threading.Barrier(2)
    plugins = [Watching("one", gate), Watching("two", gate)]
    errors: list[BaseException] = []

    def build(plugin: Watching, folder: str) -> None:
        try:
            _build(tmp_path / folder, plugin)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=build, args=(p, p.name)) for p in plugins]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert [p.seen for p in plugins] == [(ASSEMBLY_GC_THRESHOLD, 11, 12)] * 2
    assert gc.get_threshold() == app_threshold
