"""A tool's argument docs read as docstring_parser reads them, however the docstring is written.

A cold start reads every tool's docstring, so the usual shape (one ``Args:`` section of
``name: text`` items) is read without docstring_parser; these tests hold that reading to
docstring_parser's on many docstrings, usual and not, and check that reading the usual
ones never imports it (a warm start imports it for nothing).
"""

from __future__ import annotations

import inspect
import random
import subprocess
import sys

import pytest
from docstring_parser import google

from oracle_core import tool
from oracle_core.authoring.tools.docstrings import SECTION_TITLES, _parsed_args, argument_docs


def docstring_parser_reading(doc: str) -> dict[str, str]:
    """The argument docs as docstring_parser's Google-style parse gives them: the slow path
    the fast reader stands in for, and the reference it is held to."""
    return _parsed_args(doc)


def test_the_section_titles_are_docstring_parsers_and_notes() -> None:
    titles = [section.title for section in google.DEFAULT_SECTIONS]
    assert list(SECTION_TITLES) == [*titles, "Note", "Notes"]


USUAL = """Record a transaction.

    Longer text: it has a colon.

    Args:
        date: The date, in YYYY-MM-DD format
        amount (float): How much,
            in the account's currency.
        tags (list[str], optional): Labels.

    Returns:
        The transaction's id.
    """


def test_the_usual_docstring_gives_each_argument_on_one_line() -> None:
    doc = inspect.cleandoc(USUAL)
    assert argument_docs(doc) == {
        "date": "The date, in YYYY-MM-DD format",
        "amount": "How much, in the account's currency.",
        "tags": "Labels.",
    }
    assert argument_docs(doc) == docstring_parser_reading(doc)


@pytest.mark.parametrize(
    "doc",
    [
        "",
        "Only a description.",
        "Do it.\n\nArgs:\n    x (str: a broken line",
        "Do it.\n\nArgs:\n    x: one\n\nRaises:\n    ValueError",  # the parse fails: none
        "Do it.\n\nArgs:\n    x: one\n\nRaises:\n    ValueError: when bad",
        "Do it.\n\nArgs:\n    x: one\nArgs:\n    y: two",  # twice: the last wins
        "Do it.\n\nArgs:\n\n    x: one\n    y\n        : two",
        "Do it.\n\nArgs:\n    x\n        more: text",  # the name runs on: 'xmore'
        "Do it.\n\nArgs:\n    \n    x: one",
        "Do it.\n\nArgs:",
        "Do it.\n\nArgs:\nx: not indented",
        "Do it.\n\nArgs:\n    x: one\n  y: less indented\n    z: three",
        "Do it.\n\nParameters:\n    x: one\nArguments:\n    y: two",
        "Do it.\n\nAttributes:\n    x: not an argument\nArgs:\n    y: two",
        "Do it.\n\nArgs: \t\n    x: one\r\n    y: two",
        "Do it.\n\nArgs:\n\u00a0   x: odd whitespace\n    y: two",
        "Args:\n    x: one",
        "  Args:\n      x: one\n      y: two",
        "Do it.\n\tArgs:\n\t\tx: tabs",
        "Do it.\n\nNote:\n    a: not an argument\n\nArgs:\n    x (int, optional): one",
        "Do it.\n\nExamples:\n    Args:\n        x: inside an example",
    ],
)
def test_unusual_docstrings_read_as_docstring_parser_reads_them(doc: str) -> None:
    assert argument_docs(doc) == docstring_parser_reading(doc)


_LINES = [
    "Do the thing.",
    "",
    "",
    "Some text: with a colon.",
    "Args:",
    "Args:  ",
    "Arguments:",
    "Parameters:\t",
    "Returns:",
    "Raises:",
    "Attributes:",
    "Examples:",
    "Note:",
    "Notes:\r",
    "args:",
    "Args :",
    "Unknown:",
    "    x: the x",
    "    y (int): the y",
    "    z (list[str], optional): the z. Defaults to [].",
    "    n: ",
    "    broken",
    "    : nameless",
    "    1st: not a name",
    "    a b: two words",
    "    q (str: broken",
    "        continued: on a deeper line",
    "        continued",
    "  shallower: line",
    "      deeper: item",
    "   ",
    "\tw: a tab",
    "\u00a0   v: odd whitespace",
    "    ValueError: when it fails",
    "    ValueError",
    "    Args:",
    "x: at the margin",
]


def _random_docstring(rng: random.Random) -> str:
    lines = [rng.choice(_LINES) for _ in range(rng.randint(1, 12))]
    style = rng.randrange(4)
    if style == 1:  # as written in code: indented after the first line
        lines = [lines[0], *("    " + line if line else line for line in lines[1:])]
    elif style == 2:
        lines = ["", *lines, "    "]
    elif style == 3:
        lines = [lines[0], "", "Args:", *lines[1:]]
    return "\n".join(lines)


def test_many_docstrings_read_as_docstring_parser_reads_them() -> None:
    rng = random.Random(27)
    for _ in range(4000):
        doc = _random_docstring(rng)
        assert argument_docs(doc) == docstring_parser_reading(doc), repr(doc)


def test_reading_the_usual_docstring_imports_no_docstring_parser() -> None:
    code = (
        "import sys\n"
        "from oracle_core import tool\n"
        "@tool\n"
        "def f(x: str, y: int = 2) -> str:\n"
        "    '''Do it.\n\n    Args:\n        x: the x\n        y: the y\n    '''\n"
        "    return x\n"
        "assert f.parameters['properties']['y']['description'] == 'the y'\n"
        "print('docstring_parser' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_description_reads_as_cleaned_by_inspect_however_the_docstring_is_written() -> None:
    from oracle_core.authoring.tools.docstrings import docstring_summary, summary

    rng = random.Random(29)
    for index in range(4000):
        doc = _random_docstring(rng)
        if index % 2:  # the usual: spaces and line breaks only
            doc = doc.replace("\t", "    ").replace("\u00a0", " ").replace("\r", "")
        if index % 3 == 0:
            doc = "\n" + doc
        assert docstring_summary(doc) == summary(inspect.cleandoc(doc)), repr(doc)


def test_a_tool_description_is_the_cleaned_text_before_the_first_section() -> None:
    @tool
    def record(date: str) -> str:
        """Record a transaction
          in the books.

        Returns:
            Its id.

        Args:
            date: when.
        """
        return date

    assert record.description == "Record a transaction\n  in the books."
