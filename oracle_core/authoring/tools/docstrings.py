"""Reading a tool's docstring: the description at decoration time, argument help on first need.

Two paths on purpose. Every ``@tool`` reads its description at import, so :func:`summary`
is a line scan over the section titles; the full Google-style parse of
:func:`parse_docstring` (for the ``Args:`` descriptions) waits until the tool's schema is
first built.
"""

from __future__ import annotations

import re

from docstring_parser import ParseError, google

# The Google-style sections docstring_parser knows, and notes: a description ends at the first.
_SECTIONS = (*(section.title for section in google.DEFAULT_SECTIONS), "Note", "Notes")
_SECTION = re.compile(rf"^({'|'.join(map(re.escape, _SECTIONS))}):\s*$")


def summary(doc: str) -> str:
    """The description part of a docstring: everything before its first section header.

    A line scan over docstring_parser's section titles rather than a full parse: every
    ``@tool`` reads its description at import, where a parse costs about eight times more.
    """
    lines = doc.splitlines()
    for index, line in enumerate(lines):
        # Most lines hold no colon: the substring test spares them the regex.
        if ":" in line and not line.startswith((" ", "\t")) and _SECTION.match(line.strip()):
            return "\n".join(lines[:index]).strip()
    return doc.strip()


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and ``Args:`` descriptions.

    Parsed by ``docstring_parser``; an argument's description is one line (its wrapped
    lines joined by spaces). A section it cannot parse gives no argument descriptions
    rather than an error: they are help for the model, never required.
    """
    notes = [google.Section(t, "note", google.SectionType.SINGULAR) for t in ("Note", "Notes")]
    try:
        parsed = google.GoogleParser([*google.DEFAULT_SECTIONS, *notes]).parse(doc)
    except ParseError:
        return summary(doc), {}
    args = {
        param.arg_name: " ".join((param.description or "").split())
        for param in parsed.params
        # Args/Arguments/Parameters/Params, not Attributes; and a name, not a broken line.
        if param.args[0] == "param" and param.arg_name.isidentifier()
    }
    return summary(doc), args
