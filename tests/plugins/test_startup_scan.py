"""The installed plugins' entry points are scanned once and kept while nothing installed changed.

Real distributions in a folder on the path: a start scans them and keeps what it found
under ``ORACLE_HOME``; a later start reads that instead, until a distribution is added,
removed, reinstalled or has its entry points edited.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from support import SitePackages, plugin_code

from oracle_core import Oracle
from oracle_core.plugins import discovery, installed
from oracle_core.plugins.installed import installed_plugins
from oracle_core.store.memory import MemoryCheckpointer

pytestmark = pytest.mark.usefixtures("only_the_path_finder")


def _names(site: SitePackages) -> list[str]:
    """The plugins a fresh oracle of ``site`` assembled (as a new process would see them)."""
    for module in site.modules:
        sys.modules.pop(module, None)
    oracle = Oracle(
        settings=site.settings(), path=[str(site.root)], checkpointer=MemoryCheckpointer()
    )
    try:
        assert oracle.registry.failures == []
        return list(oracle.registry.plugins)
    finally:
        oracle.close_sync()


def _later(path: Path) -> None:
    later = time.time() + 5
    os.utime(path, (later, later))


def test_a_second_start_reads_the_kept_scan(
    site: SitePackages, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    folder = site.root / "home" / "cache"
    first = installed_plugins([str(site.root)], folder)

    monkeypatch.setattr(installed, "find_entry_points", lambda path=None: [])
    second = installed_plugins([str(site.root)], folder)

    assert [(s.name, s.distribution, s.version, s.value) for s in second] == [
        (s.name, s.distribution, s.version, s.value) for s in first
    ]
    assert second[0].load().__name__ == "oracle_plugin_alpha"


def test_a_plugin_installed_after_a_start_is_found(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    assert _names(site) == ["alpha"]

    site.add("oracle-plugin-beta", plugin_code("beta"))

    assert _names(site) == ["alpha", "beta"]


def test_an_uninstalled_plugin_is_gone(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    info = site.add("oracle-plugin-beta", plugin_code("beta"))
    assert _names(site) == ["alpha", "beta"]

    shutil.rmtree(info)

    assert _names(site) == ["alpha"]


def test_an_entry_point_edited_in_place_is_followed(site: SitePackages) -> None:
    info = site.add("oracle-plugin-alpha", plugin_code("alpha"))
    (site.root / "oracle_plugin_other.py").write_text(plugin_code("gamma"))
    site.modules.append("oracle_plugin_other")
    assert _names(site) == ["alpha"]
    points = info / "entry_points.txt"

    points.write_text(points.read_text().replace("= oracle_plugin_alpha", "= oracle_plugin_other"))
    _later(points)

    assert _names(site) == ["gamma"]


def test_a_distribution_rewritten_in_place_is_read_again(site: SitePackages) -> None:
    info = site.add("oracle-plugin-alpha", plugin_code("alpha"), version="1.0.0")
    folder = site.root / "home" / "cache"
    installed_plugins([str(site.root)], folder)

    metadata = info / "METADATA"  # its RECORD, when it has one: a reinstall rewrites it
    metadata.write_text(metadata.read_text().replace("1.0.0", "2.0.0"))
    _later(metadata)
    (found,) = installed_plugins([str(site.root)], folder)

    assert found.version == "2.0.0"


def test_an_unchanged_path_is_not_scanned(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    folder = site.root / "home" / "cache"
    scanned = discovery.find_entry_points([str(site.root)])
    installed_plugins([str(site.root)], folder)

    def scan(path: object = None) -> list[discovery.PluginSource]:
        raise AssertionError("scanned again")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(installed, "find_entry_points", scan)
        kept = installed_plugins([str(site.root)], folder)

    assert [s.value for s in kept] == [s.value for s in scanned]


def test_an_unwritable_cache_folder_still_finds_the_plugins(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    blocked = site.root / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")

    found = installed_plugins([str(site.root)], blocked / "cache")

    assert [s.name for s in found] == ["oracle_plugin_alpha"]


def test_another_finder_that_reports_distributions_means_a_scan_every_time(
    site: SitePackages, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Finder:
        def find_spec(self, *args: object) -> None:
            return None

        def find_distributions(self, *args: object) -> list[object]:
            return []

    monkeypatch.undo()  # the real check, with a finder of another kind on the path
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    folder = site.root / "home" / "cache"
    installed_plugins([str(site.root)], folder)

    monkeypatch.setattr(installed, "find_entry_points", lambda path=None: [])
    assert installed_plugins([str(site.root)], folder) == []
