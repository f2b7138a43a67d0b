"""docs/operators.md's settings table is the one the settings table writes
(``python -m oracle_core.settings.docs``), as datasette's docs are written from its SETTINGS."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle_core.settings.docs import END, START, default_cell, main, markdown_table, with_table
from oracle_core.settings.table import SETTINGS, by_variable

OPERATORS = Path(__file__).resolve().parents[2] / "docs" / "operators.md"


def test_the_operators_guide_holds_the_table_the_settings_write() -> None:
    text = OPERATORS.read_text(encoding="utf-8")
    written = text[text.index(START) + len(START) : text.index(END)].strip("\n")

    assert written == markdown_table("operators.md"), "run python -m oracle_core.settings.docs"


def test_every_variable_of_a_page_is_a_row_of_that_pages_table() -> None:
    table = markdown_table("operators.md")

    for setting in SETTINGS:
        if setting.variable and setting.page == "operators.md":
            assert f"| `{setting.variable}` |" in table


def test_a_default_is_shown_as_the_operator_writes_it() -> None:
    assert default_cell(by_variable("ORACLE_STRICT_PLUGINS")) == "`0`"
    assert default_cell(by_variable("ORACLE_RESUME_RUNS")) == "`1`"
    assert default_cell(by_variable("ORACLE_HOOK_TIMEOUT")) == "`10`"
    assert default_cell(by_variable("ORACLE_SLOW_IMPORT_SECONDS")) == "`0.5`"
    assert default_cell(by_variable("ORACLE_API_TOKEN")) == ""


def test_the_command_rewrites_a_stale_table_and_check_says_so(tmp_path: Path) -> None:
    page = tmp_path / "operators.md"
    page.write_text(f"# Title\n\n{START}\n| old |\n{END}\n\nAfter.\n", encoding="utf-8")

    assert main([str(page), "--check"]) == 1
    assert main([str(page)]) == 0
    assert main([str(page), "--check"]) == 0
    text = page.read_text(encoding="utf-8")
    assert "| old |" not in text and text.endswith(f"{END}\n\nAfter.\n")


def test_a_page_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="markers"):
        with_table("# no table here\n")
