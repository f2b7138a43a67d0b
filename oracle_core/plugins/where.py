"""Where in a plugin's own code an import failed: the file and line to look at.

A traceback of a failed import runs through importlib and often into the libraries the
plugin uses; the line that matters is the last one in the plugin's own files (its package
folder, or its module file). ``ORACLE_TRACE_PLUGINS=1`` prints the whole traceback too.
"""

from __future__ import annotations

import importlib.util
import os
import traceback
from pathlib import Path


def plugin_files(module: str) -> Path | None:
    """The folder of ``module``'s top-level package, or its file for a single module."""
    top = module.split(":")[0].split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    return Path(spec.origin).resolve() if spec.origin else None


def _inside(filename: str, root: Path) -> bool:
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return False
    return path == root or root in path.parents


def failure_location(error: BaseException, module: str) -> str | None:
    """``file, line N`` of the last frame in the plugin's files where ``error`` came from.

    A :class:`SyntaxError` names its own file and line. ``None`` when no frame of the
    plugin's files is in the traceback.
    """
    root = plugin_files(module)
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        return f"{_shown(error.filename)}, line {error.lineno}"
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if root is not None and _inside(f.filename, root)]
    if not mine:
        return None
    frame = mine[-1]
    return f"{_shown(frame.filename)}, line {frame.lineno}"


def _shown(filename: str) -> str:
    """``filename`` relative to the working folder when it is below it, else as it is."""
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive (Windows)
        return filename
    return filename if relative.startswith("..") else relative


def full_traceback(error: BaseException) -> str:
    """The whole traceback of ``error``, as Python prints it."""
    return "".join(traceback.format_exception(error))
