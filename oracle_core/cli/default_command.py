"""``oracle "prompt"``: a first word that is no command runs ``oracle ask``, as ``llm
"prompt"`` runs ``llm prompt``.

What goes to ``ask``: a first argument that is not a command (``oracle "What is 2+2?"``,
``oracle hello``), or an option the group itself does not take (``oracle -m demo "hi"``).
``oracle`` alone still prints the help, ``oracle --help`` and ``--version`` are the group's.
A single word close to a command (``oracle serv``, ``oracle modles``) is not sent to a
model: it stays an unknown command, and click's error suggests the command; the error adds
how to ask it instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence

DEFAULT_COMMAND = "ask"
"""The command a first word that is no command runs."""

GROUP_OPTIONS = frozenset({"-h", "--help", "--version"})
"""The options of the ``oracle`` group itself: everything else before a command is ask's."""

_TYPO_CUTOFF = 0.75  # difflib ratio: "serv" 0.89, "modles" 0.83, "hello" under 0.5 for all


def near_command(word: str, commands: Collection[str]) -> str | None:
    """The command a single ``word`` looks like a slip of (``serv`` for ``serve``), if any."""
    if not word or any(c.isspace() for c in word):
        return None  # a prompt of several words is never a command's slip
    found = difflib.get_close_matches(word, list(commands), n=1, cutoff=_TYPO_CUTOFF)
    return found[0] if found else None


def with_default(args: Sequence[str], commands: Collection[str]) -> list[str]:
    """``args`` with :data:`DEFAULT_COMMAND` put first when they do not start with a command,
    a group option, or a slip of a command's name."""
    if not args:
        return list(args)
    first = args[0]
    if first in commands or first in GROUP_OPTIONS or first == "--":
        return list(args)
    if not first.startswith("-") and near_command(first, commands) is not None:
        return list(args)  # click says: No such command 'serv'. Did you mean 'serve'?
    return [DEFAULT_COMMAND, *args]
