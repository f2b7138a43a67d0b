"""A cached entry point is imported only when its distribution's entry_points.txt declares it.

The entry point cache (``$ORACLE_HOME/cache/entry-points-*.json``) lets a start skip reading
every distribution's metadata. Anyone who can write that folder could add or edit a row;
before, every start then imported the module the row named. Seeded variants of added and
edited rows: the start imports no module the distributions do not declare, keeps the real
plugins, warns once, and rewrites the file as a scan finds it.
"""

from __future__ import annotations

import json
import logging
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from support import SitePackages, plugin_code

from oracle_core import Oracle

pytestmark = pytest.mark.usefixtures("only_the_path_finder")

SEED = 38
EVIL = "oracle_cache_evil"


def _start(site: SitePackages) -> Oracle:
    for module in [*site.modules, EVIL]:
        sys.modules.pop(module, None)
    return Oracle(settings=site.settings(), path=[str(site.root)])


def _cache(site: SitePackages) -> Path:
    [path] = (site.root / "home" / "cache").glob("entry-points-*.json")
    return path


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "was not trusted" in r.getMessage()
    ]


def _variants(rows: list[list[Any]], site: SitePackages, rng: random.Random) -> list[Any]:
    """Seeded tampered row lists: each names the module ``EVIL`` somewhere it is imported."""
    alpha, beta = rows
    outside = site.root.parent / "elsewhere" / "oracle_plugin_evil-1.0.dist-info"
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "entry_points.txt").write_text(f"[oracle.plugins]\nevil = {EVIL}\n")
    (outside / "RECORD").write_text("")
    made: list[Any] = []
    for _ in range(8):
        name = "".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 12)))
        target = rng.choice([EVIL, f"{EVIL}:plugin", f"{EVIL}:{name}"])
        made += [
            [alpha, beta, [name, alpha[1], alpha[2], target, *alpha[4:]]],  # added, alpha's files
            [alpha, [beta[0], beta[1], beta[2], target, *beta[4:]]],  # beta's value edited
            [[name, "oracle-plugin-evil", "1.0", target, *alpha[4:]], beta],  # another dist
            [alpha, beta, [name, beta[1], beta[2], target, str(outside / "RECORD"), alpha[5]]],
            [alpha, beta, [name, "oracle-plugin-evil", "1.0", target, None, None]],  # unchecked
        ]
    return made


def test_a_row_its_distribution_does_not_declare_is_never_imported(
    site: SitePackages, caplog: pytest.LogCaptureFixture
) -> None:
    marker = site.root / "imported"
    (site.root / f"{EVIL}.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    site.add("oracle-plugin-beta", plugin_code("beta"))
    _start(site).close_sync()  # the cold start scans and writes the cache
    written = json.loads(_cache(site).read_text())
    variants = _variants(written["sources"], site, random.Random(SEED))
    assert len(variants) == 40

    for rows in variants:
        _cache(site).write_text(json.dumps({**written, "sources": rows}))
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="oracle_core.plugins"):
            oracle = _start(site)
        oracle.close_sync()

        assert not marker.exists(), rows  # the module the row named never ran
        assert EVIL not in sys.modules
        assert sorted(oracle.registry.plugins) == ["alpha", "beta"]
        assert oracle.registry.failures == []
        [warning] = _warnings(caplog)
        assert "entry point cache" in warning and "rebuilt" in warning
        assert json.loads(_cache(site).read_text()) == written  # rebuilt as a scan finds it


def test_an_untouched_cache_is_trusted_without_a_warning(
    site: SitePackages, caplog: pytest.LogCaptureFixture
) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    _start(site).close_sync()
    with caplog.at_level(logging.WARNING, logger="oracle_core.plugins"):
        oracle = _start(site)
    oracle.close_sync()

    assert "alpha" in oracle.registry.plugins
    assert _warnings(caplog) == []


@pytest.mark.parametrize("spelling", ["{root}/./", "{root}//", "{root}/../site-packages"])
def test_a_path_spelled_otherwise_is_still_cached_and_trusted(
    site: SitePackages, caplog: pytest.LogCaptureFixture, spelling: str
) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    entry = spelling.format(root=site.root)
    for module in site.modules:
        sys.modules.pop(module, None)
    Oracle(settings=site.settings(), path=[entry]).close_sync()
    rows = json.loads(_cache(site).read_text())["sources"]  # written: each row checkable

    with caplog.at_level(logging.WARNING, logger="oracle_core.plugins"):
        for module in site.modules:
            sys.modules.pop(module, None)
        oracle = Oracle(settings=site.settings(), path=[entry])
    oracle.close_sync()

    assert [row[0] for row in rows] == ["oracle_plugin_alpha"]
    assert "alpha" in oracle.registry.plugins
    assert _warnings(caplog) == []
