"""What tells the start-up cache that a plugin changed: its files and their stamps.

A cache entry is trusted only while the files it was keyed by keep their size and
modification time (:func:`stamp`): the distribution's ``RECORD``, the files defining the
plugin object, its tool functions and the classes their hints name (:func:`source_files`),
and, for a deferred plugin, every module its import loaded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import ModuleType

from oracle_core.authoring.tools.tool import Tool, hint_classes


def stamp(path: str) -> tuple[str, int, int] | None:
    """A file's path, size and modification time (ns); ``None`` when it cannot be read."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (path, info.st_size, info.st_mtime_ns)


def source_files(obj: object, tools: Sequence[Tool]) -> set[str]:
    """The files defining the plugin object, its tool functions and their hints' classes."""
    modules: set[object] = {obj.__name__ if isinstance(obj, ModuleType) else type(obj).__module__}
    for tool in tools:
        modules.add(getattr(tool.function, "__module__", None))
        modules.update(cls.__module__ for cls in hint_classes(tool))
    files: set[str] = set()
    for name in modules:
        module = sys.modules.get(name) if isinstance(name, str) else None
        file = getattr(module, "__file__", None)
        if isinstance(file, str):
            files.add(file)
    return files
