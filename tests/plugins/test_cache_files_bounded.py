"""A start-up cache file that is not what the oracle writes never stalls or breaks a start.

Both caches under ``$ORACLE_HOME/cache`` (``plugins-*.json``, ``entry-points-*.json``) are
read as regular files within a size bound and parsed within a depth bound. Before, a FIFO in
a cache file's place hung the start, a link to ``/dev/zero`` read until MemoryError, and
deeply nested JSON raised RecursionError out of ``Oracle()``. Seeded variants (FIFO, device
link, a folder, a sparse file past the size bound, deep JSON, truncated files, garbage, and
leaves of the wrong type): the start finishes (a generous bound proves it is not stalled)
with every plugin, at most one warning, and the file rewritten so the next start is quiet.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import SitePackages, plugin_code

from oracle_core import Oracle
from oracle_core.plugins.cache_file import MAX_CACHE_BYTES
from oracle_core.plugins.installed import MAX_SCAN_BYTES

pytestmark = pytest.mark.usefixtures("only_the_path_finder")

SEED = 38
NOT_STALLED = 60.0
"""Seconds a start may take here before it counts as stalled (it takes well under one)."""

Make = Callable[[Path, bytes], None]
"""Puts a variant in the cache file's place, given its path and its pristine bytes."""


def _fifo(path: Path, pristine: bytes) -> None:
    path.unlink()
    os.mkfifo(path)


def _link(target: str) -> Make:
    def make(path: Path, pristine: bytes) -> None:
        path.unlink()
        path.symlink_to(target)

    return make


def _folder(path: Path, pristine: bytes) -> None:
    path.unlink()
    path.mkdir()


def _sparse(limit: int) -> Make:
    def make(path: Path, pristine: bytes) -> None:
        os.truncate(path, limit + 1)  # no disk used: a hole past the bound

    return make


def _bytes(data: Callable[[bytes], bytes]) -> Make:
    return lambda path, pristine: path.write_bytes(data(pristine))


def _leaves(value: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*where, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*where, i))]
    return [where]


def _retyped(pristine: bytes, rng: random.Random) -> bytes:
    """The document with one seeded leaf replaced by a value of another type."""
    document = json.loads(pristine)
    where = rng.choice(_leaves(document))
    parent = document
    for step in where[:-1]:
        parent = parent[step]
    old = parent[where[-1]]
    parent[where[-1]] = rng.choice(
        [v for v in (7, 2.5, [1], {"a": 1}, True) if type(v) is not type(old)]
    )
    return json.dumps(document).encode()


def _nested(pristine: bytes, deep: int) -> bytes:
    """The file as written, an array ``deep`` levels deep put inside its first entry (a
    line of its own in the plugins file, which is parsed alone)."""
    inner = b"[" * deep + b"]" * deep
    for marker in (b'{"key":', b'"sources":['):
        if marker in pristine:
            return pristine.replace(marker, marker + inner + b",", 1)
    raise AssertionError("no entry to nest into")


def _variants(limit: int, rng: random.Random) -> list[tuple[str, Make, bool]]:
    """(label, how to make it, whether it must warn) for one cache file."""
    made: list[tuple[str, Make, bool]] = [
        ("fifo", _fifo, True),
        ("dev-zero", _link("/dev/zero"), True),
        ("dev-null", _link("/dev/null"), True),
        ("folder", _folder, True),
        ("past-size-bound", _sparse(limit), True),
        ("garbage", _bytes(lambda p: bytes(rng.randrange(256) for _ in range(300))), True),
        ("empty", _bytes(lambda p: b""), True),
    ]
    for _ in range(4):
        deep = rng.randint(101, 200_000)
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        made.append(
            (
                f"deep-{deep}",
                _bytes(lambda p, d=deep, o=opener, c=closer: (o * d + c * d).encode()),
                True,
            )
        )
    for _ in range(2):
        deep = rng.randint(101, 50_000)
        made.append((f"deep-inside-{deep}", _bytes(lambda p, d=deep: _nested(p, d)), True))
    for _ in range(6):
        cut = rng.random()
        made.append((f"cut-{cut:.3f}", _bytes(lambda p, c=cut: p[: int(len(p) * c)]), True))
    for index in range(8):
        seeded = random.Random(rng.random())
        made.append((f"retyped-{index}", _bytes(lambda p, r=seeded: _retyped(p, r)), False))
    return made


CASES = [
    pytest.param(kind, make, warns, id=f"{kind}-{label}")
    for kind, limit in (("plugins", MAX_CACHE_BYTES), ("entry-points", MAX_SCAN_BYTES))
    for label, make, warns in _variants(limit, random.Random(f"{SEED}-{kind}"))
    if sys.platform != "win32" or label not in ("fifo", "dev-zero", "dev-null")  # POSIX only
]


def _start(site: SitePackages) -> Oracle:
    """A start in a thread of its own: a stalled start fails the test instead of hanging it."""
    for module in site.modules:
        sys.modules.pop(module, None)
    outcome: list[Oracle | BaseException] = []

    def build() -> None:
        try:
            outcome.append(Oracle(settings=site.settings(), path=[str(site.root)]))
        except BaseException as error:
            outcome.append(error)

    worker = threading.Thread(target=build, daemon=True)
    worker.start()
    worker.join(NOT_STALLED)
    assert outcome, f"the start stalled for {NOT_STALLED} s"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _unblock(path: Path) -> None:
    """Let a start stuck opening a FIFO go (after a failure, so the process can end)."""
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "was not trusted" in r.getMessage()
    ]


@pytest.mark.parametrize(("kind", "make", "warns"), CASES)
def test_a_bad_cache_file_is_rebuilt_with_one_warning(
    site: SitePackages, caplog: pytest.LogCaptureFixture, kind: str, make: Make, warns: bool
) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    site.add("oracle-plugin-beta", plugin_code("beta"))
    Oracle(settings=site.settings(), path=[str(site.root)]).close_sync()  # writes both caches
    [path] = (site.root / "home" / "cache").glob(f"{kind}-*.json")
    make(path, path.read_bytes())

    try:
        with caplog.at_level(logging.WARNING, logger="oracle_core.plugins"):
            oracle = _start(site)
    finally:
        if path.is_fifo():
            _unblock(path)
    oracle.close_sync()

    assert sorted(oracle.registry.plugins) == ["alpha", "beta"]
    assert oracle.registry.failures == []
    warned = _warnings(caplog)
    assert len(warned) == (1 if warns else len(warned)) and len(warned) <= 1, warned
    assert all(path.name in w for w in warned)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="oracle_core.plugins"):
        _start(site).close_sync()
    if path.is_dir():  # a folder cannot be replaced by a file: each start warns once
        assert len(_warnings(caplog)) == 1
        return
    assert _warnings(caplog) == []  # rewritten: the next start trusts it
    assert path.is_file() and not path.is_symlink()
