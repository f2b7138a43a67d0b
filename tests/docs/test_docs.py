"""Meta-tests: every hook, public name and environment variable is documented."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import oracle_core
from oracle_core import hookspecs

ROOT = Path(__file__).resolve().parents[2]
HOOKS = [
    name
    for name, value in vars(hookspecs).items()
    if name.startswith("oracle_") and callable(value)
]


def test_there_are_nine_hooks() -> None:
    assert sorted(HOOKS) == sorted(
        [
            "oracle_manifest",
            "oracle_tools",
            "oracle_middleware",
            "oracle_routes",
            "oracle_mcp_servers",
            "oracle_startup",
            "oracle_shutdown",
            "oracle_prompts",
            "oracle_resources",
        ]
    )


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_full_docstring_and_is_in_the_authors_guide(hook: str) -> None:
    doc = inspect.getdoc(getattr(hookspecs, hook)) or ""
    guide = (ROOT / "docs" / "plugin-authors.md").read_text()

    assert len(doc.splitlines()) >= 3, f"{hook} needs a full docstring"
    assert "Args:" in doc or "Returns:" in doc
    assert f"`{hook}(" in guide


@pytest.mark.parametrize("name", [n for n in oracle_core.__all__ if not n.startswith("__")])
def test_every_public_name_has_a_docstring(name: str) -> None:
    value = getattr(oracle_core, name)
    if inspect.isclass(value) or inspect.isfunction(value):
        assert (inspect.getdoc(value) or "").strip(), f"oracle_core.{name} has no docstring"


def test_every_environment_variable_the_code_reads_is_in_the_operators_guide() -> None:
    code = "\n".join(
        p.read_text() for p in (ROOT / "oracle_core").rglob("*.py") if "testing" not in p.parts
    )
    used = set(re.findall(r"\b(ORACLE_[A-Z_]+[A-Z])\b", code)) - {"ORACLE_PLUGIN_"}
    guides = ("operators.md", "server.md", "testing.md")  # testing.md: the test harness's
    guide = "".join((ROOT / "docs" / name).read_text() for name in guides)

    missing = sorted(v for v in used if v not in guide)
    assert missing == []


def test_the_authors_guide_names_every_import_an_author_needs() -> None:
    from oracle_core import plugin

    guide = (ROOT / "docs" / "plugin-authors.md").read_text()

    missing = [name for name in plugin.__all__ if f"`{name}`" not in guide]
    assert missing == []
