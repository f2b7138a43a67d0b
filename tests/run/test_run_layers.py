"""The run loop stands below the waits: run/ never imports run/waits, nothing holds an Oracle."""

from __future__ import annotations

import re

from layers import PACKAGE, import_graph

LOOP = ["loop", "state", "turn", "saving", "opening", "deps"]


def test_the_loop_and_its_state_and_steps_import_nothing_of_run_waits() -> None:
    graph = import_graph(top_level_only=False, types=True)

    for module in (f"oracle_core.run.{name}" for name in LOOP):
        assert not [m for m in graph[module] if m.startswith("oracle_core.run.waits")], module


def test_nothing_below_the_facade_names_the_oracle_as_a_type() -> None:
    below = ["run", "capabilities", "plugins", "store", "credentials", "models", "values"]
    pattern = re.compile(r"(:|->)\s*\"?Oracle\b|import Oracle\b|\[Oracle\]")
    found = [
        f"{path.relative_to(PACKAGE)}: {line.strip()}"
        for room in below
        for path in (PACKAGE / room).rglob("*.py")
        for line in path.read_text(encoding="utf-8").splitlines()
        if pattern.search(line)
    ]
    assert found == []
