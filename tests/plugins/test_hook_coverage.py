"""Every hook of ``oracle_core/hookspecs.py`` is tested through a real plugin, and documented.

In the style of datasette's ``test_plugin_hooks_have_tests``: a new hook cannot land
without a test that has a plugin implement it and a real oracle call it, nor without its
row in the hook table of ``docs/plugin-authors.md``.

The rule, checked on the source of every module under ``tests/`` (read, never run): a hook
``oracle_x`` is covered when one module both

1. **implements it in a plugin**: a function or method named ``oracle_x`` decorated with
   ``@hookimpl`` (``@hookimpl(...)`` too), either in the module's code (a plugin class or
   object, or the module itself as a plugin), or in plugin source the module writes out as
   a string (for ``SitePackages.add``, a plugin folder, a child process); and
2. **loads plugins into a real oracle**, so that pluggy calls the hook, not the test: the
   module calls ``Oracle(...)``, one of the fixtures or helpers that build one
   (``make_oracle``, ``serve``, ``oracle_factory``/``OracleFactory``, ``build_oracle``,
   ``SitePackages.oracle``), or runs the ``oracle`` CLI (``CliRunner().invoke`` or a child
   ``python -m oracle_core``), directly or through a function of its own that does.

A plugin written only to be handed to the bare loader (``assemble``, ``new_plugin_manager``)
does not count: that is a unit test of the loader, not of a hook as plugins meet it. A
plugin class defined in a module but never named again there (never instantiated nor
passed on) does not count either. The rule reads code, so it can be fooled by a module that
defines a plugin and builds an unrelated oracle; it is a floor, kept honest by review, not
a proof.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import oracle_core.hookspecs as hookspecs

TESTS = Path(__file__).resolve().parents[1]
DOCS = TESTS.parent / "docs" / "plugin-authors.md"

LOADERS = frozenset(
    {"Oracle", "make_oracle", "serve", "oracle_factory", "OracleFactory", "build_oracle"}
)
"""Calls that build a real oracle from plugins (``site.oracle(...)`` is matched apart)."""


def hook_names() -> dict[str, list[str]]:
    """Every hook the core specifies, with its parameters."""
    marker = f"{hookspecs.PROJECT_NAME}_spec"
    return {
        name: list(inspect.signature(fn).parameters)
        for name, fn in vars(hookspecs).items()
        if inspect.isfunction(fn) and hasattr(fn, marker)
    }


def _is_hookimpl(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute):
        return target.attr == "hookimpl"
    return isinstance(target, ast.Name) and target.id == "hookimpl"


def _hook_of(node: ast.AST, hooks: set[str]) -> str | None:
    """The hook ``node`` implements: a ``@hookimpl`` function named after one, else None."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name not in hooks:
        return None
    return node.name if any(map(_is_hookimpl, node.decorator_list)) else None


def _implemented(tree: ast.AST, hooks: set[str]) -> set[str]:
    """The hooks implemented by ``@hookimpl`` functions in ``tree``, by a plugin in use.

    A method counts when its class is named again (instantiated or passed on); a function
    outside any class counts as the module (or the function it is nested in) being the
    plugin.
    """
    named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    methods = {id(item) for c in classes for item in c.body}
    found = {
        hook
        for c in classes
        if c.name in named
        for item in c.body
        if (hook := _hook_of(item, hooks)) is not None
    }
    found |= {
        hook
        for node in ast.walk(tree)
        if id(node) not in methods and (hook := _hook_of(node, hooks)) is not None
    }
    return found


def _sources_in_strings(tree: ast.AST) -> Iterator[ast.AST]:
    """Plugin source held in string constants (those that parse as Python with a hookimpl)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "@hookimpl" not in node.value:
                continue
            try:
                yield ast.parse(textwrap.dedent(node.value))
            except SyntaxError:
                # An f-string's pieces, or code cut around placeholders: read what parses.
                for piece in re.split(r"\n(?=@hookimpl)", textwrap.dedent(node.value)):
                    try:
                        yield ast.parse(piece)
                    except SyntaxError:
                        continue
        elif isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value if isinstance(v, ast.Constant) else "x"
                for v in node.values
                if isinstance(v, ast.Constant | ast.FormattedValue)
            )
            if "@hookimpl" in text:
                try:
                    yield ast.parse(textwrap.dedent(text))
                except SyntaxError:
                    continue


def _callee(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _loads_an_oracle(node: ast.AST, helpers: set[str]) -> bool:
    """Whether ``node`` builds a real oracle, itself or through one of ``helpers``."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            name = _callee(inner)
            if name in LOADERS or name in helpers:
                return True
            if name == "oracle" and isinstance(inner.func, ast.Attribute):  # site.oracle()
                return True
            if name == "invoke":  # CliRunner().invoke(main, [...]): the oracle CLI
                return True
        if isinstance(inner, ast.Constant) and inner.value == "oracle_core":
            return True  # [sys.executable, "-m", "oracle_core", ...]: the CLI in a child
    return False


def loads_an_oracle(tree: ast.Module) -> bool:
    """Whether the module builds a real oracle, directly or through its own functions."""
    functions = {
        node.name: node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    helpers: set[str] = set()
    while True:  # a function calling a function that builds an oracle builds one too
        more = {
            n for n, f in functions.items() if n not in helpers and _loads_an_oracle(f, helpers)
        }
        if not more:
            break
        helpers |= more
    return _loads_an_oracle(tree, helpers)


def coverage() -> dict[str, list[str]]:
    """For each hook, the test modules that cover it by the rule of this module's docstring."""
    hooks = set(hook_names())
    covered: dict[str, list[str]] = {hook: [] for hook in sorted(hooks)}
    for path in sorted(TESTS.rglob("*.py")):
        if path == Path(__file__).resolve():
            continue
        tree = ast.parse(path.read_text(), str(path))
        if not loads_an_oracle(tree):
            continue
        implemented = _implemented(tree, hooks)
        for source in _sources_in_strings(tree):
            implemented |= _implemented(source, hooks)
        for hook in implemented:
            covered[hook].append(str(path.relative_to(TESTS)))
    return covered


def test_the_hookspecs_are_found() -> None:
    assert {"oracle_manifest", "oracle_tools", "oracle_startup"} <= set(hook_names())


def test_every_hook_is_called_through_a_real_plugin_by_some_test() -> None:
    untested = [hook for hook, modules in coverage().items() if not modules]

    assert untested == [], (
        f"no test has a plugin implement {untested} and a real oracle call it "
        "(see this module's docstring for what counts)"
    )


def test_the_rule_sees_plugins_in_code_and_in_strings() -> None:
    code = ast.parse(
        textwrap.dedent(
            '''
            class Unused:
                @hookimpl
                def oracle_routes(self): ...

            class Used:
                @hookimpl(tryfirst=True)
                def oracle_tools(self): ...

            SOURCE = """
            @hookimpl
            def oracle_startup(oracle): ...
            """

            def build(tmp):
                return Oracle([Used()])

            def test_it(tmp):
                build(tmp)
            '''
        )
    )
    hooks = set(hook_names())
    found = _implemented(code, hooks)
    for source in _sources_in_strings(code):
        found |= _implemented(source, hooks)

    assert found == {"oracle_tools", "oracle_startup"}
    assert loads_an_oracle(code)
    assert not loads_an_oracle(ast.parse("assemble([Used()])\n"))


def _documented_hooks() -> dict[str, list[str]]:
    """The hooks of the table under ``## Hooks`` in docs/plugin-authors.md, with the
    parameters of the fullest call form each row shows."""
    text = DOCS.read_text()
    section = text.split("\n## Hooks\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        first = line.split("|")[1] if line.startswith("|") else ""
        forms = re.findall(r"`(oracle_\w+)\(([^)]*)\)`", first)
        if forms:
            name, params = forms[-1]
            rows[name] = [p.strip() for p in params.split(",") if p.strip()]
    return rows


def test_every_hook_has_a_row_in_the_hook_table_of_plugin_authors_md() -> None:
    documented = _documented_hooks()

    assert sorted(documented) == sorted(hook_names())


def test_each_hook_row_shows_the_hooks_parameters() -> None:
    documented = _documented_hooks()

    for hook, parameters in hook_names().items():
        assert documented.get(hook) == parameters, hook
