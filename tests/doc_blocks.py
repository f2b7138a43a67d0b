"""The fenced code blocks of README.md and docs/*.md, for the tests that run them.

Each block says what it is by its language (```` ```python ````, ```` ```toml ````,
```` ```sh ````, ...). A block that cannot run as written says so just before it, in an HTML
comment that GitHub does not render: ``<!-- fragment: what it needs -->``. A fragment must
still compile (Python) or parse (TOML, JSON); keep them few.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

RUN = {"python", "toml", "sh", "bash", "console", "json", "yaml"}
"""The languages whose blocks a test runs or parses."""

NOT_RUN = {"text"}
"""The languages listed as not run: output, messages, diagrams, synopses."""

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)(?P<lang>[^`\s]*)\s*$")
_FRAGMENT = re.compile(r"^\s*<!--\s*fragment:\s*(?P<why>.+?)\s*-->\s*$")
_FILE = re.compile(r"^# (?P<path>[\w./-]+\.(?:py|toml))\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page.

    Attributes:
        page: the page, relative to the repository (``docs/usage.md``).
        line: the line of its opening fence (1-based).
        lang: its language, as written after the fence (``""`` when none).
        text: its body, without the indentation of the fence.
        fragment: why it cannot run as written, from ``<!-- fragment: ... -->`` (or ``None``).
    """

    page: str
    line: int
    lang: str
    text: str
    fragment: str | None

    @property
    def id(self) -> str:
        """``page:line``, which names the block in a test's id and its failures."""
        return f"{self.page}:{self.line}"

    @property
    def file(self) -> str | None:
        """The file it is, when its first line is a comment naming one (``# pyproject.toml``)."""
        first = self.text.splitlines()[0] if self.text else ""
        match = _FILE.match(first)
        return match["path"] if match else None


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence = opening["fence"]
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        before = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        marker = _FRAGMENT.match(before)
        found.append(
            Block(
                page=str(page.relative_to(ROOT)),
                line=index + 1,
                lang=opening["lang"],
                text=textwrap.dedent("\n".join(lines[index + 1 : end])) + "\n",
                fragment=marker["why"] if marker else None,
            )
        )
        index = end + 1
    return found


def all_blocks(*langs: str) -> list[Block]:
    """Every block of every page, or those in one of ``langs``."""
    every = [block for page in PAGES for block in blocks_of(page)]
    return [b for b in every if not langs or b.lang in langs]
