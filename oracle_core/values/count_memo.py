"""Token counts remembered across processes: a text counted once is not counted again.

Counting needs ``o200k_base``'s ranks loaded (:mod:`oracle_core.values.bpe`), about a tenth
of a second, more than the rest of an ``oracle ask`` start-up spends on the system prompt.
The text counted at every start (the Tier-1 block, for its budget warning) is the same from
one start to the next, so its count is kept in a small JSON file beside the start-up cache,
keyed by the text's SHA-256: a start whose block is unchanged reads the count instead.

The file holds digests and numbers only. Anything unreadable in it (a broken or foreign
file, a value that is not a count) is ignored and the text counted again; a file that cannot
be written is left as it is, and a missing folder above the file's own is never made (an
oracle whose home does not exist writes nothing).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from oracle_core.values.files import replace_text
from oracle_core.values.tokens import count_tokens

KEEP = 16
"""The most counts the file keeps (the newest); one oracle home rarely has more than one block."""


class CountMemo:
    """Counts of texts, kept in ``path`` (``None``: counted every time, nothing kept).

    Args:
        path: the JSON file of counts.
        count: the counter (default :func:`~oracle_core.values.tokens.count_tokens`).
    """

    def __init__(self, path: Path | None, count: Callable[[str], int] = count_tokens) -> None:
        self.path = path
        self._count = count

    def count(self, text: str) -> int:
        """The tokens of ``text``: remembered when it was counted before, else counted now
        and remembered."""
        if self.path is None:
            return self._count(text)
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        known = self._read()
        found = known.get(key)
        if found is not None:
            return found
        counted = self._count(text)
        known.pop(key, None)
        known[key] = counted
        self._write(dict(list(known.items())[-KEEP:]))
        return counted

    def _read(self) -> dict[str, int]:
        assert self.path is not None
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {
            k: v
            for k, v in data.items()
            if isinstance(k, str) and type(v) is int and v >= 0  # no bool, no float
        }

    def _write(self, counts: dict[str, int]) -> None:
        assert self.path is not None
        # The cache folder, not its parents: a warning never makes an ORACLE_HOME.
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(exist_ok=True)
            replace_text(self.path, json.dumps(counts))
