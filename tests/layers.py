"""The core's import graph and the layer table's package path, read by the layer tests."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "oracle_core"


def _parse(source: str) -> ast.Module:
    """``ast.parse``, once more after CPython 3.11's spurious "AST constructor recursion depth
    mismatch" (python/cpython#106905: the converter's depth is kept per interpreter, so a
    parse in another thread of the test worker at the same moment upsets it; the parse
    itself is sound)."""
    try:
        return ast.parse(source)
    except SystemError:
        return ast.parse(source)


def import_graph(top_level_only: bool, types: bool = False) -> dict[str, set[str]]:
    """``module -> modules it imports`` for every module of ``oracle_core``."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = _parse(path.read_text(encoding="utf-8"))
        if top_level_only:
            tree = ast.Module(
                body=[
                    n
                    for n in tree.body
                    if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                ],
                type_ignores=[],
            )
        imported = _runtime_imports(tree, name, path.name == "__init__.py", set(paths), types)
        graph[name] = {m for m in imported if m in paths and m != name}
    return graph


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(
    tree: ast.AST,
    module: str,
    is_package: bool,
    modules: set[str] | frozenset[str] = frozenset(),
    types: bool = False,
) -> set[str]:
    """Every ``oracle_core`` module ``tree`` imports at run time (top level or in functions),
    and with ``types`` those imported for the type checker too."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not types:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("oracle_core"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if is_package else module.rsplit(".", 1)[0]
                for _ in range(node.level - 1):
                    package = package.rsplit(".", 1)[0]
                base = f"{package}.{base}" if base else package
            if base.startswith("oracle_core"):
                for alias in node.names:  # a submodule, or a name defined in ``base``
                    sub = f"{base}.{alias.name}"
                    found.add(sub if sub in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
