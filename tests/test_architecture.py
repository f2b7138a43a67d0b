"""The package's shape: the layers of docs/architecture.md, no import cycles, and the run
loop depends on no facade.

Imports are read from the source (``ast``), not executed. Imports inside an
``if TYPE_CHECKING:`` block exist only for the type checker; they count in the layer table
and in the strictest circle scope too, since an arrow only for types still ties two
concepts together.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest
from layers import _runtime_imports, import_graph

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "environment", "version", "blocking"),
    ("values",),
    ("settings",),
    ("authoring",),
    ("hookspecs",),
    ("plugins",),
    ("models", "store", "capabilities", "credentials"),
    ("run",),
    ("run.waits",),
    ("telemetry",),
    ("assembly", "prompt_report", "handle", "settling"),
    ("oracle",),
    ("server", "testing", "cli"),
)
"""The rooms of ``oracle_core`` from the ground up: each imports only the rooms of the rows
below it (docs/architecture.md draws the same table)."""

SIDEWAYS: dict[tuple[str, str], str] = {
    ("credentials", "store"): "credentials are kept through the store's credentials protocol",
    ("cli", "server"): "`oracle serve` and `oracle mcp` run the server",
}
"""Arrows within one row, each with its reason; the reverse of each is not allowed."""

AGAINST: dict[tuple[str, str], str] = {}
"""Arrows that run against the layers, each named and justified (at most six)."""

FACES = ("oracle_core", "oracle_core.plugin", "oracle_core.__main__")
"""The two public faces and ``python -m``: they may import any room; no room imports them."""


def room(module: str) -> str:
    """The room (layer folder or top-level module) of an ``oracle_core`` module."""
    parts = module.split(".")[1:]
    if parts[:2] == ["run", "waits"]:
        return "run.waits"
    return parts[0] if parts else ""


def _row(name: str) -> int:
    for index, row in enumerate(LAYERS):
        if name in row:
            return index
    raise AssertionError(f"room {name!r} is in no row of LAYERS: add it where it belongs")


def room_arrows() -> dict[tuple[str, str], set[tuple[str, str]]]:
    """``(room, room it imports) -> the module pairs behind that arrow``, types included."""
    arrows: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for module, deps in import_graph(top_level_only=False, types=True).items():
        if module in FACES:
            continue
        for dep in deps:
            if dep in FACES:
                arrows.setdefault((room(module), "faces"), set()).add((module, dep))
            elif room(dep) != room(module):
                arrows.setdefault((room(module), room(dep)), set()).add((module, dep))
    return arrows


def test_every_room_imports_only_the_rooms_below_it() -> None:
    wrong = []
    for (source, target), pairs in sorted(room_arrows().items()):
        if target == "faces":
            wrong.append(f"{source} imports a public face: {sorted(pairs)}")
            continue
        below = _row(target) < _row(source)
        if below or (source, target) in SIDEWAYS or (source, target) in AGAINST:
            continue
        wrong.append(f"{source} -> {target}: {sorted(pairs)}")
    assert not wrong, "arrows against the layers of docs/architecture.md:\n" + "\n".join(wrong)


def test_no_two_rooms_import_each_other() -> None:
    arrows = room_arrows()
    both = sorted(f"{a} <-> {b}" for a, b in arrows if a < b and (b, a) in arrows)
    assert not both


def test_the_arrows_against_the_layers_are_few_and_each_is_still_needed() -> None:
    arrows = room_arrows()
    assert len(AGAINST) <= 6
    assert all(reason for reason in [*AGAINST.values(), *SIDEWAYS.values()])
    stale = [pair for pair in [*AGAINST, *SIDEWAYS] if pair not in arrows]
    assert not stale, f"allowed arrows no module uses any more: {stale}"


def test_the_room_table_places_a_module_by_its_folder() -> None:
    assert room("oracle_core.run.waits.settle") == "run.waits"
    assert room("oracle_core.run.loop") == "run"
    assert room("oracle_core.store.sqlite.threads") == "store"
    assert room("oracle_core.errors") == "errors"


def _closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for dep in graph.get(stack.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


@pytest.mark.parametrize("scope", ["module level", "anywhere", "anywhere, for types too"])
def test_no_module_of_oracle_core_imports_itself_in_a_circle(scope: str) -> None:
    graph = import_graph(top_level_only=scope == "module level", types="types" in scope)
    # A package's __init__ re-exporting its own submodules is not a circle of concepts.
    edges = {m: {d for d in deps if not m.startswith(f"{d}.")} for m, deps in graph.items()}

    try:
        order = list(graphlib.TopologicalSorter(edges).static_order())
    except graphlib.CycleError as error:
        cycle = " -> ".join(error.args[1])
        pytest.fail(f"import cycle: {cycle}")
    assert set(order) >= set(graph)


def test_the_run_loop_imports_nothing_from_the_oracle_facade() -> None:
    graph = import_graph(top_level_only=False)
    run_modules = [m for m in graph if m == "oracle_core.run" or m.startswith("oracle_core.run.")]

    for module in run_modules:
        reached = _closure(graph, module)
        assert "oracle_core.oracle" not in reached, module
        assert "oracle_core" not in reached, f"{module} imports the package's public face"


def test_imports_in_functions_count_and_type_checking_imports_do_not() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import oracle_core.hidden\n"
        "def f():\n    from oracle_core.run import loop\n"
    )
    modules = {"oracle_core.run", "oracle_core.run.loop", "oracle_core.hidden"}
    found = _runtime_imports(ast.parse(source), "oracle_core.x", False, modules)
    assert found == {"oracle_core.run.loop"}


def test_importing_and_building_an_oracle_changes_no_environment_and_imports_no_litellm(
    tmp_path: Path,
) -> None:
    import json
    import os
    import subprocess
    import sys

    script = (
        "import json, os, sys\n"
        "before = dict(os.environ)\n"
        "import oracle_core, oracle_core.cli, oracle_core.server\n"
        "oracle = oracle_core.Oracle(entry_points=False)\n"
        "print(json.dumps({'env': dict(os.environ) == before, "
        "'litellm': 'litellm' in sys.modules, 'prompt': bool(oracle.system_prompt)}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "LITELLM_"))}
    env["ORACLE_HOME"] = str(tmp_path)
    env.pop("TIKTOKEN_CACHE_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )

    assert json.loads(done.stdout) == {"env": True, "litellm": False, "prompt": True}
