"""Reading the start-up caches under ``$ORACLE_HOME/cache`` without trusting them.

Anyone who can write that folder can put anything there: a FIFO (an ``open`` that never
returns), a link to ``/dev/zero`` (a read that never ends), a file of gigabytes, JSON nested
thousands deep (a ``RecursionError`` in the parser). Every cache file is therefore opened
without blocking and read only when it is a regular file within a size bound, and parsed
only within a depth bound; anything else is a :class:`CacheFileError`, which the caches
answer by rebuilding the file with one warning (never by failing the start).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from oracle_core.values.text import json_depth

__all__ = ["CACHE_JSON_DEPTH", "CacheFileError", "loads_bounded", "open_regular", "read_regular"]

CACHE_JSON_DEPTH = 100
"""How deep the JSON of a cache record may nest (objects and arrays); deeper is corrupt."""


class CacheFileError(ValueError):
    """A cache file or record that is not what the oracle writes: it is not trusted."""


def open_regular(path: Path, limit: int) -> BinaryIO | None:
    """``path`` opened for reading, or ``None`` when there is no such file.

    Opened without blocking (a FIFO does not hang the start) and kept only when it is a
    regular file (after links: a link to ``/dev/zero`` or a device is refused) of at most
    ``limit`` bytes.

    Raises:
        CacheFileError: it is something else, or larger, or cannot be opened.
    """
    flags = os.O_RDONLY
    for name in ("O_NONBLOCK", "O_CLOEXEC", "O_BINARY"):  # as far as the system has them
        flags |= getattr(os, name, 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise CacheFileError(f"{path.name} cannot be opened ({error.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CacheFileError(f"{path.name} is not a regular file")
        if info.st_size > limit:
            raise CacheFileError(f"{path.name} is larger than {limit:,} bytes")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` (at most ``limit``), ``None`` when absent.

    Raises:
        CacheFileError: see :func:`open_regular`; also when it grew past ``limit`` while read.
    """
    handle = open_regular(path, limit)
    if handle is None:
        return None
    with handle:
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            raise CacheFileError(f"{path.name} cannot be read ({error.strerror})") from None
    if len(data) > limit:
        raise CacheFileError(f"{path.name} is larger than {limit:,} bytes")
    return data


def loads_bounded(text: str | bytes, depth: int = CACHE_JSON_DEPTH) -> Any:
    """``text`` parsed as JSON, refused when it nests deeper than ``depth``.

    Raises:
        CacheFileError: it is not JSON, or nests too deep (the parser's own recursion
            bound, or ``depth``, whichever is met first).
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise CacheFileError(f"JSON nested deeper than {depth} levels") from None
    except ValueError as error:  # also UnicodeDecodeError
        raise CacheFileError(f"not JSON ({error})") from None
    if json_depth(value, stop=depth) > depth:
        raise CacheFileError(f"JSON nested deeper than {depth} levels")
    return value
