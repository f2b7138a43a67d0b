"""Replacing a small file atomically: readers see the old content or the new, never half."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def replace_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a scratch file in the same folder, then rename it
    over ``path``. The folder must exist; the scratch file is removed if anything fails.

    Raises:
        OSError: the folder is missing or not writable, or the disk is full.
    """
    handle, scratch = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(scratch, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise
