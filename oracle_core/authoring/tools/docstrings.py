"""Reading a tool's docstring: the description at decoration time, argument help on first need.

Two paths on purpose. Every ``@tool`` reads its description at import, so
:func:`docstring_summary` (and :func:`summary`) is a scan for the first section title; the
``Args:`` descriptions of :func:`argument_docs` wait until
the tool's schema is first built (a warm start never reads them, nor imports
docstring_parser).

:func:`argument_docs` follows docstring_parser's Google-style parse exactly. For the usual
docstring (one ``Args:`` section of ``name: text`` items, besides sections that cannot
fail to parse) it reads the arguments itself, as that parse would, in a few microseconds
instead of some forty: a cold start of thousands of tools reads every tool's docstring.
Anything else goes to docstring_parser (tests/authoring/test_tools_docstrings.py compares the two
on many docstrings, and :func:`docstring_summary` with ``inspect.cleandoc``).
"""

from __future__ import annotations

import inspect
import re

SECTION_TITLES = (
    "Arguments",
    "Args",
    "Parameters",
    "Params",
    "Raises",
    "Exceptions",
    "Except",
    "Attributes",
    "Example",
    "Examples",
    "Returns",
    "Yields",
    "Note",
    "Notes",
)
"""The sections of a Google-style docstring: docstring_parser's (``google.DEFAULT_SECTIONS``,
in its order) and notes. A description ends at the first; the tests check that the list
still matches docstring_parser's."""

_SECTION = re.compile(rf"^({'|'.join(map(re.escape, SECTION_TITLES))}):\s*$")

_TITLES = frozenset(SECTION_TITLES)

_PARAM_SECTIONS = frozenset({"Arguments", "Args", "Parameters", "Params"})
"""Sections whose items are arguments."""

_ITEM_SECTIONS = frozenset({"Raises", "Exceptions", "Except", "Attributes"})
"""Other sections of ``name: text`` items: one without a colon fails the whole parse."""

_TITLE_END = " \t\r\f\v"
"""What docstring_parser allows after a section title's colon."""


def summary(doc: str) -> str:
    """The description part of a docstring: everything before its first section header.

    A line scan over the section titles rather than a full parse: every ``@tool`` reads
    its description at import, where a parse costs about eight times more.
    """
    lines = doc.splitlines()
    for index, line in enumerate(lines):
        # Most lines hold no colon: the substring test spares them the regex.
        if ":" in line and not line.startswith((" ", "\t")) and _SECTION.match(line.strip()):
            return "\n".join(lines[:index]).strip()
    return doc.strip()


_ODD_SPACE = re.compile(r"[^\S \n]")
"""Whitespace but spaces and line breaks (tabs, carriage returns, form feeds, ...)."""

_INDENTS = re.compile(r"\n( *)[^ \n]")
"""The indent of each line after the first that has text."""

_HEADER = re.compile(rf"\n( *)(?:{'|'.join(map(re.escape, SECTION_TITLES))}):( *)(?=\n|\Z)")
"""A section header line after the first, and its indent."""


def docstring_summary(doc: str) -> str:
    """``summary(inspect.cleandoc(doc))``: the description of a docstring as written in code.

    Every ``@tool`` reads its description at import, where cleaning the whole docstring
    (a Python loop over its lines) cost more than the rest of the decorator. A docstring
    whose only whitespace is spaces and line breaks (the usual) is read with a few
    regular-expression scans instead: its margin, then its first section header at that
    margin; only the lines before the header are cleaned.
    """
    if _ODD_SPACE.search(doc):
        return summary(inspect.cleandoc(doc))
    first = doc.partition("\n")[0]
    if _SECTION.match(first.strip()):
        return ""  # the first line is a header: no description
    margin = min(map(len, _INDENTS.findall(doc)), default=0)
    end = len(doc)
    for header in _HEADER.finditer(doc):
        if len(header.group(1)) == margin:  # deeper: not a header once cleaned
            end = header.start()
            break
    lines = doc[:end].split("\n")
    return "\n".join([lines[0].lstrip(), *(line[margin:] for line in lines[1:])]).strip()


def argument_docs(doc: str) -> dict[str, str]:
    """The ``Args:`` descriptions of a Google-style docstring, by argument name, each on
    one line (its wrapped lines joined by spaces). Parsed as ``docstring_parser`` parses
    it; a section it cannot parse gives none rather than an error: they are help for the
    model, never required."""
    args = _quick_args(doc)
    return _parsed_args(doc) if args is None else args


def _parsed_args(doc: str) -> dict[str, str]:
    """The argument descriptions docstring_parser's Google-style parse finds in ``doc``."""
    # Imported here: only a cold start (or a tool first shown) parses a docstring.
    from docstring_parser import ParseError, google

    notes = [google.Section(t, "note", google.SectionType.SINGULAR) for t in ("Note", "Notes")]
    try:
        parsed = google.GoogleParser([*google.DEFAULT_SECTIONS, *notes]).parse(doc)
    except ParseError:
        return {}
    return {
        param.arg_name: " ".join((param.description or "").split())
        for param in parsed.params
        # Args/Arguments/Parameters/Params, not Attributes; and a name, not a broken line.
        if param.args[0] == "param" and param.arg_name.isidentifier()
    }


def _quick_args(doc: str) -> dict[str, str] | None:
    """What :func:`_parsed_args` returns, read directly; ``None`` when ``doc`` is not of the
    usual shape (then only docstring_parser can say).

    The usual shape: at most one section of arguments and none of another section of
    items, each section title once; the arguments' lines start at one indent, each item
    ``name: text`` (or ``name (type): text``) with its colon on its first line, and its
    further lines indented deeper. The other sections (returns, examples, notes) cannot
    fail to parse and give no arguments, so they are passed over.
    """
    lines = _cleaned_lines(doc)
    titles: dict[str, int] = {}
    for index, line in enumerate(lines):
        if ":" not in line:
            continue  # most lines: no title
        head = line.rstrip(_TITLE_END)
        if head.endswith(":") and head[:-1] in _TITLES:
            if head[:-1] in titles or head[:-1] in _ITEM_SECTIONS:
                return None
            titles[head[:-1]] = index
    found = [title for title in titles if title in _PARAM_SECTIONS]
    if not found:
        return {}
    if len(found) > 1:
        return None
    items = _items(lines, titles[found[0]] + 1)
    if items is None:
        return None
    args: dict[str, str] = {}
    for first, part in items:
        before, colon, _ = first.partition(":")
        if not colon:
            return None  # the name would run on to a later line
        name = _argument_name(before) if "(" in before else before
        if name.isidentifier():
            args[name] = " ".join(part.split(":", 1)[1].split())
    return args


def _cleaned_lines(doc: str) -> list[str]:
    """The lines of ``doc`` cleaned as docstring_parser cleans it (``inspect.cleandoc``).

    A docstring read with ``inspect.getdoc`` is clean already: when nothing cleaning does
    can change it (no tab, no leading whitespace, no blank line at either end, and a
    later line that starts unindented, or none with any text), it is only split.
    """
    lines = doc.split("\n")
    if (
        "\t" not in doc
        and lines[0][:1].strip()
        and lines[-1]
        and (
            any(line[:1].strip() for line in lines[1:])  # a title is one, usually the third
            or not any(line.strip() for line in lines[1:])
        )
    ):
        return lines
    return inspect.cleandoc(doc).split("\n")


def _items(lines: list[str], start: int) -> list[tuple[str, str]] | None:
    """The items of the section whose lines begin at ``start``: each one's first line
    and its whole text (from after the indent), as docstring_parser splits them.

    The section ends before the first line that does not start with whitespace; an item
    starts at each line with exactly the indent of the section's first line. ``None``
    when the section is empty or starts with a blank line.
    """
    end = start
    while end < len(lines) and not (lines[end] and not lines[end][0].isspace()):
        end += 1
    body = lines[start:end]
    while body and not body[0]:
        del body[0]
    while body and not body[-1]:
        body.pop()
    if not body or not body[0].strip():
        return None
    width = len(body[0]) - len(body[0].lstrip())
    indent = body[0][:width]
    items: list[tuple[str, list[str]]] = []
    for line in body:
        if line.startswith(indent) and len(line) > width and not line[width].isspace():
            items.append((line[width:], [line[width:]]))
        else:
            items[-1][1].append(line)
    found = []
    for first, text in items:
        part = "\n".join(text).rstrip("\n")
        if ":" not in part:
            return None  # docstring_parser fails on this item
        found.append((first, part))
    return found


_TYPED = re.compile(r"\s*(.+?)\s*\(\s*(.*[^\s]+)\s*\)")
"""An argument written ``name (type)``: docstring_parser's ``GOOGLE_TYPED_ARG_REGEX``."""


def _argument_name(before: str) -> str:
    """The argument name in the text before an item's colon, as docstring_parser reads it."""
    typed = _TYPED.match(before)
    return typed.group(1) if typed else before
