"""Replacing a small file atomically: readers see the old content or the new, never half."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def replacing(path: Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """A scratch file in ``path``'s folder to write (text as UTF-8, or bytes), renamed over
    ``path`` when the block ends. The folder must exist; the scratch file is removed if
    anything fails, and ``path`` is then left as it was.

    Raises:
        OSError: the folder is missing or not writable, or the disk is full.
    """
    handle, scratch = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") if binary else os.fdopen(handle, "w", encoding="utf-8") as out:
            yield out
        os.replace(scratch, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise


def replace_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`replacing`).

    Raises:
        OSError: the folder is missing or not writable, or the disk is full.
    """
    with replacing(path) as out:
        out.write(text)


def remove_others(keep: Path, pattern: str) -> None:
    """Delete the files of ``keep``'s folder that match ``pattern`` but ``keep`` (a cache's
    files of another format or version, never read again)."""
    for stale in keep.parent.glob(pattern):
        if stale != keep:
            stale.unlink(missing_ok=True)
