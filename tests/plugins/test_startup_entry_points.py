"""Installed plugins are found by reading the metadata folders directly, as importlib finds them.

A cold start lists every distribution on the path; reading their ``.dist-info`` folders
directly (instead of through :mod:`importlib.metadata`'s objects) must find the very same
plugins, in the same order, with the same names, versions and metadata files, however
the folders are laid out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle_core.plugins import discovery
from oracle_core.plugins.discovery import find_entry_points
from oracle_core.testing.distributions import write_distribution


def _through_importlib(dirs: list[str], monkeypatch: pytest.MonkeyPatch) -> list[object]:
    with monkeypatch.context() as patch:
        patch.setattr(discovery, "only_path_finder", lambda: False)
        return list(find_entry_points(dirs))


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A folder of distributions laid out in every way a site folder may hold them."""
    root = tmp_path / "site"
    root.mkdir()
    write_distribution(root, "alpha", "", version="1.0")
    write_distribution(root, "beta-tools", "", entry_point="beta", version="2.0")
    # The same distribution twice (a broken upgrade): the first importlib finds wins.
    write_distribution(root, "gamma", "", version="1.0")
    write_distribution(root, "gamma", "", entry_point="gamma_new", version="2.0")
    # Metadata without a plugin, without entry points, and a file-style egg-info.
    (root / "plain-1.0.dist-info").mkdir()
    (root / "plain-1.0.dist-info" / "METADATA").write_text("Name: plain\nVersion: 1.0\n")
    (root / "other-1.0.dist-info").mkdir()
    (root / "other-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nx = y\n")
    (root / "legacy.egg-info").write_text("Name: legacy\n")
    # An egg-info folder with a plugin and PKG-INFO instead of METADATA.
    egg = root / "Delta.Plugin.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: delta.plugin\nVersion: 0.3\n")
    (egg / "entry_points.txt").write_text("[oracle.plugins]\ndelta = delta:plugin\n")
    (root / "alpha-1.0.dist-info" / "RECORD").write_text("alpha.py,,\n")
    return root


def test_reading_the_folders_finds_what_importlib_finds(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    second = tmp_path / "second"
    second.mkdir()
    write_distribution(second, "alpha", "", version="9.0")  # shadowed by the first folder
    write_distribution(second, "epsilon", "")
    dirs = [str(site), str(tmp_path / "absent"), str(second)]

    direct = find_entry_points(dirs)

    assert direct == _through_importlib(dirs, monkeypatch)
    assert [(s.distribution, s.name, s.version) for s in direct] == [
        ("alpha", "alpha", "1.0"),
        ("beta-tools", "beta", "2.0"),
        ("delta.plugin", "delta", "0.3"),
        ("epsilon", "epsilon", "1.0.0"),
        ("gamma", "gamma", "1.0"),
        ("gamma", "gamma_new", "2.0"),
    ]
    assert direct[0].metadata_path == str(site / "alpha-1.0.dist-info" / "RECORD")


def test_a_relative_folder_on_the_path_reads_as_importlib_reads_it(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(site)
    for dirs in ([""], ["."]):
        assert find_entry_points(dirs) == _through_importlib(dirs, monkeypatch)


def test_a_zip_or_an_egg_on_the_path_is_left_to_importlib(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(b"not really a zip")
    egg = tmp_path / "thing-1.0.egg"
    egg.mkdir()
    for extra in (archive, egg):
        dirs = [str(site), str(extra)]
        assert discovery._metadata_folders(dirs) is None
        assert find_entry_points(dirs) == _through_importlib(dirs, monkeypatch)
