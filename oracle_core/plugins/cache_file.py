"""The start-up cache's file: one JSON document, written one plugin a line.

``{"format":N,"plugins":{`` on the first line, then ``"name":{...},`` a plugin, then the
footer. A start reads only where each line is and parses one plugin's entry when that
plugin asks for it (:class:`~oracle_core.plugins.cache.StartupCache`); a file of the same
format written otherwise (by hand, or by a test) is still read, whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any, BinaryIO, NamedTuple

from oracle_core.plugins.cache_read import CacheFileError, loads_bounded, open_regular

CACHE_FORMAT = 3
"""Raised whenever what an entry means changes: old files are then never read."""

MAX_CACHE_BYTES = 512 * 1024 * 1024
"""A start-up cache file larger than this is not read (a few KB a plugin)."""

_DECODER = json.JSONDecoder()
_HEADER = f'{{"format":{CACHE_FORMAT},"plugins":{{\n'.encode()
"""The first line of a cache file written one plugin a line (see :func:`write_lines`)."""
_FOOTER = b"}}\n"


class Span(NamedTuple):
    """Where an entry's JSON text is in the file: its line's start, then after how many
    bytes of it and how long it is."""

    at: int
    skip: int
    length: int


def write_lines(
    out: IO[bytes],
    entries: dict[str, Span | dict[str, Any]],
    text: Callable[[Span], bytes],
) -> dict[str, int]:
    """Write ``entries`` as one JSON document, the header, then one plugin a line (ASCII);
    an entry still in the file as read is copied with ``text``.

    Returns where each plugin's line starts (bytes).
    """
    offsets: dict[str, int] = {}
    at = out.write(_HEADER)
    last = len(entries) - 1
    for index, (name, entry) in enumerate(entries.items()):
        body = (
            text(entry)
            if isinstance(entry, Span)
            else json.dumps(entry, separators=(",", ":")).encode()
        )
        offsets[name] = at
        end = b",\n" if index < last else b"\n"
        at += out.write(json.dumps(name).encode() + b":" + body + end)
    out.write(_FOOTER)
    return offsets


def split_line(line: str) -> tuple[Any, str]:
    """The name and the entry's JSON text of a line ``"name":{...},`` of the file.

    Raises:
        ValueError, IndexError: the line is not of that shape.
    """
    name, end = _DECODER.raw_decode(line)
    if line[end] != ":":
        raise ValueError("not a cache line")
    text = line[end + 1 :].rstrip("\n")
    return name, text[:-1] if text.endswith(",") else text


def read_entries(path: Path) -> tuple[dict[str, Span | dict[str, Any]], BinaryIO | None]:
    """The entries of the cache file, each as where its text is, and the open file they
    are read from; no file, or one of another format, counts as empty. A file not written
    one plugin a line is parsed whole (and is not kept open).

    Raises:
        CacheFileError: the file is not one the oracle writes: not a regular file, larger
            than :data:`MAX_CACHE_BYTES`, nested too deep, cut short or misshapen.
    """
    handle = open_regular(path, MAX_CACHE_BYTES)
    if handle is None:
        return {}, None
    try:
        first = handle.readline()
        if first != _HEADER:
            with handle:
                return _read_whole(first + handle.read()), None
        return _read_lines(handle, len(first)), handle
    except CacheFileError:
        handle.close()
        raise
    except (OSError, ValueError, IndexError) as error:
        handle.close()
        raise CacheFileError(f"{path.name} is misshapen ({error})") from None


def _read_lines(lines: Iterable[bytes], at: int) -> dict[str, Span | dict[str, Any]]:
    """Where each entry is in the lines after the header (``"name":{...},`` each, then
    the footer), the first line starting at ``at``. Only the names are parsed.

    Raises:
        ValueError: a line is not of that shape (or not ASCII, as written), or the footer
            is missing (a cut file).
    """
    entries: dict[str, Span | dict[str, Any]] = {}
    for raw in lines:
        if raw == _FOOTER:
            return entries
        name, end = _DECODER.raw_decode(raw[: raw.index(b":{")].decode("ascii"))
        length = len(raw) - end - 1 - (2 if raw.endswith(b",\n") else 1)
        if not isinstance(name, str) or raw[end] != 58 or length < 2:  # 58: ":"
            raise ValueError("not a cache line")
        entries[name] = Span(at, end + 1, length)
        at += len(raw)
    raise ValueError("the cache file is cut short")


def _read_whole(text: bytes) -> dict[str, Span | dict[str, Any]]:
    """The entries of a cache file parsed as one JSON document (empty when it is of
    another format: written by another version, not corrupt)."""
    data = loads_bounded(text)
    if isinstance(data, dict) and isinstance(data.get("format"), int):
        if data["format"] != CACHE_FORMAT:
            return {}
        plugins = data.get("plugins")
        if isinstance(plugins, dict):
            return {name: entry for name, entry in plugins.items() if isinstance(entry, dict)}
    raise CacheFileError("not a start-up cache")
