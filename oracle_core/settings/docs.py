"""The settings table of a docs page, written from the settings table
(:mod:`oracle_core.settings.table`), as datasette's docs are written from its ``SETTINGS``.

The page holds the table between two marker comments; ``python -m oracle_core.settings.docs``
writes it there (``--check``: only says whether it is current, exit 1 when not), and a test
keeps docs/operators.md equal to what this module writes. To change a row, change the
setting's row in the table, then run the command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from oracle_core.settings.setting import Setting
from oracle_core.settings.table import SETTINGS

START = (
    "<!-- settings table: written by `python -m oracle_core.settings.docs` "
    "from the rows of oracle_core/settings/table*.py -->"
)
"""The comment the table starts after."""

END = "<!-- end of the settings table -->"
"""The comment the table ends before."""

HEADER = "| variable | default | meaning |\n|---|---|---|"
"""The table's header rows."""


def default_cell(setting: Setting) -> str:
    """The default column of ``setting``'s row: its ``shown_default``, else its default value
    in code font (``1``/``0`` for a switch; empty when it has none)."""
    if setting.shown_default:
        return setting.shown_default
    value = setting.default
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "1" if value else "0"
    elif isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, tuple):
        text = ",".join(str(part) for part in value)
    else:
        text = str(value)
    return f"`{text}`"


def markdown_table(page: str = "operators.md") -> str:
    """The Markdown table of every setting with an environment variable that ``page`` lists,
    in table order: variable, default, meaning."""
    rows = [
        _row([f"`{s.variable}`", default_cell(s), s.help])
        for s in SETTINGS
        if s.variable and s.page == page
    ]
    return "\n".join([HEADER, *rows])


def _row(cells: Sequence[str]) -> str:
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def with_table(text: str, page: str = "operators.md") -> str:
    """``text`` (a docs page) with its table between :data:`START` and :data:`END` written
    anew.

    Raises:
        ValueError: the page lacks either marker.
    """
    start = text.find(START)
    end = text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the page has no {START!r} ... {END!r} markers")
    head = text[: start + len(START)]
    return f"{head}\n{markdown_table(page)}\n{text[end:]}"


def main(argv: Sequence[str] | None = None) -> int:
    """Write the settings table into a docs page (default ``docs/operators.md``); with
    ``--check``, only compare. Returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m oracle_core.settings.docs", description=main.__doc__
    )
    parser.add_argument("path", nargs="?", default="docs/operators.md", type=Path)
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    arguments = parser.parse_args(argv)
    path: Path = arguments.path
    text = path.read_text(encoding="utf-8")
    written = with_table(text, path.name)
    if arguments.check:
        if written != text:
            print(f"{path}: the settings table is stale; run {parser.prog}", file=sys.stderr)
            return 1
        return 0
    if written != text:
        path.write_text(written, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
