"""Which of a batch of plugins changed the core when imported: found in another process.

Assembly imports plugins one after another and checks the guarded core
(:mod:`~oracle_core.plugins.integrity`) once for every
:data:`~oracle_core.plugins.loader.CHECK_EVERY` of them. A change found is undone at once,
but whose it was cannot be told afterwards, and importing the plugins again in the same
process would run every module of theirs a second time (a library's C extension may refuse
that). So a fresh Python process, with the same path, imports the same plugins one at a
time, checking the core after each, and says which changed what. This only happens when a
plugin did patch the core; a plugin that changes it only some of the time may not do it
again there, and is then not named (its change stays undone).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence

MARKER = "oracle-patch-trace: "
"""Starts the child's one line of answer (a plugin may print too)."""

_CHILD = (
    "import json, sys\n"
    "request = json.loads(sys.stdin.readline())\n"
    "sys.path[:] = request['path']\n"
    "from oracle_core.plugins.patch_trace import trace_here\n"
    "trace_here(request['values'])\n"
)


def trace_patches(values: Sequence[str], *, timeout: float) -> list[list[str]] | None:
    """Import the entry points ``values`` (``module:attr``) one by one in a fresh process.

    Returns:
        For each, in order, the names it changed in the core (empty when none); ``None``
        when the process could not say (it failed, timed out or answered nothing).
    """
    python = sys.executable
    if getattr(sys, "frozen", False) or not python_program(python):
        return None  # an embedded or frozen Python: nothing to start a process of its own with
    path = [entry for entry in sys.path if isinstance(entry, str)]  # what imports use
    request = json.dumps({"path": path, "values": list(values)})
    try:
        done = subprocess.run(
            [python, "-c", _CHILD],
            input=request + "\n",
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                found = json.loads(line[len(MARKER) :])
            except ValueError:
                return None
            shaped = isinstance(found, list) and len(found) == len(values)
            if shaped and all(
                isinstance(names, list) and all(isinstance(n, str) for n in names)
                for names in found
            ):
                return [list(names) for names in found]
            return None
    return None


def python_program(path: str) -> bool:
    """Whether ``path`` names a Python interpreter (an embedding program's own binary, such
    as a WSGI server's, may stand in ``sys.executable``)."""
    name = os.path.basename(path).lower()
    return bool(path) and name.startswith(("python", "pypy"))


def trace_here(values: Sequence[str]) -> None:
    """The child's side: import each entry point, check and restore the core after each,
    and print the answer (what the plugins print goes to stderr)."""
    from importlib.metadata import EntryPoint

    from oracle_core.plugins.discovery import ENTRY_POINT_GROUP
    from oracle_core.plugins.integrity import CoreSnapshot

    out, sys.stdout = sys.stdout, sys.stderr
    core = CoreSnapshot.take()
    found: list[list[str]] = []
    for value in values:
        with contextlib.suppress(BaseException):  # a failed import may have patched first
            EntryPoint("plugin", value, ENTRY_POINT_GROUP).load()
        changed = core.changes()
        if changed:
            core.restore()
        found.append(changed)
    out.write(MARKER + json.dumps(found) + "\n")
    out.flush()
    os._exit(0)  # the answer is the last line: no plugin's exit handler writes after it
