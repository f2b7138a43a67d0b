"""A plugin whose import does not finish within ``ORACLE_HOOK_TIMEOUT`` is left out, as a
plugin whose hook overruns is; the start goes on without it.

Each slow plugin's module waits on an event the test releases only at teardown, so an
import that were not bounded would hold ``Oracle()`` for good: the oracle is built on a
thread the test waits for within a generous bound (it proves "not stalled", it times
nothing). Seeded layouts: one or two slow plugins anywhere among sound ones.
"""

from __future__ import annotations

import random
import sys
import threading
import types
from collections.abc import Iterator

import pytest
from support import SitePackages, plugin_code

from oracle_core import Oracle, PluginLoadError

SEED = 3810
BOUND = 1.0  # ORACLE_HOOK_TIMEOUT here: seconds each import may take (a sound one, far less)
NOT_STALLED = 60.0  # generous: only an import that is not bounded comes near it
GATE = "h38f_import_gate"  # a module holding the event the slow imports wait on


def _layouts() -> list[tuple[int, frozenset[int]]]:
    rng = random.Random(SEED)
    layouts = []
    for _ in range(6):
        size = rng.randint(2, 7)
        slow = frozenset(rng.sample(range(size), rng.randint(1, min(2, size - 1))))
        layouts.append((size, slow))
    return layouts


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """The event every slow import waits on; set at teardown, so no import is left hanging."""
    event = threading.Event()
    module = types.ModuleType(GATE)
    module.event = event  # type: ignore[attr-defined]
    sys.modules[GATE] = module
    yield event
    event.set()
    sys.modules.pop(GATE, None)


def _slow_code(name: str) -> str:
    return f"import {GATE}\n{GATE}.event.wait()\n" + plugin_code(name)


@pytest.mark.parametrize(("size", "slow"), _layouts())
def test_an_import_past_the_bound_leaves_its_plugin_out_and_the_start_goes_on(
    site: SitePackages, gate: threading.Event, size: int, slow: frozenset[int]
) -> None:
    names = [f"p{i}" for i in range(size)]
    for i, name in enumerate(names):
        code = _slow_code(name) if i in slow else plugin_code(name)
        site.add(f"oracle-plugin-{name}", code, entry_point=name)
    built: list[Oracle] = []
    start = threading.Thread(
        target=lambda: built.append(site.oracle(ORACLE_HOOK_TIMEOUT=BOUND)), daemon=True
    )

    start.start()
    start.join(NOT_STALLED)

    assert not start.is_alive(), "Oracle() waited on a plugin's import past its bound"
    (oracle,) = built
    assert sorted(oracle.registry.plugins) == sorted(
        n for i, n in enumerate(names) if i not in slow
    )
    failures = {f.plugin: f for f in oracle.registry.failures}
    assert sorted(failures) == sorted(names[i] for i in slow)
    for i in slow:
        failure = failures[names[i]]
        assert isinstance(failure, PluginLoadError)
        assert f"did not finish within {BOUND:g} s (ORACLE_HOOK_TIMEOUT)" in str(failure)
        assert "it is left out" in str(failure)
