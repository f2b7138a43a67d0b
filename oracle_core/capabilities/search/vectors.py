"""Embeddings kept per plugin digest, so a catalog change re-embeds only what changed.

One file per embedder under the cache folder (``vectors-<embedder>.npz``) holds, for every
plugin digest seen lately, the vectors of that plugin's embedded texts. Adding or upgrading
one plugin embeds that plugin alone; the rest is read back.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import numpy as np

FORMAT = "oracle-vectors-1"
"""Changes whenever what is stored changes, so an old file is never misread."""

KEEP_EXTRA = 1000
"""Digests kept beyond the current catalog's (other catalogs sharing one home)."""


class VectorStore:
    """Vectors by plugin digest, read from and written to one file (``None``: memory only).

    Args:
        path: the file, or ``None`` to keep the vectors in this process only.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries: dict[str, np.ndarray] = {}
        self._loaded = False
        self.changed = False

    @classmethod
    def for_embedder(cls, folder: Path | None, name: str) -> VectorStore:
        """The store of embedder ``name`` under ``folder`` (``None``: memory only)."""
        if folder is None:
            return cls(None)
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80]
        return cls(folder / f"vectors-{safe}.npz")

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self.path is None or not self.path.exists():
            return
        try:
            with np.load(self.path, allow_pickle=False) as saved:
                if str(saved["format"]) != FORMAT:
                    return
                keys, offsets, matrix = saved["keys"], saved["offsets"], saved["matrix"]
                for i, key in enumerate(keys.tolist()):
                    self._entries[str(key)] = matrix[offsets[i] : offsets[i + 1]]
        except (OSError, ValueError, KeyError):
            self._entries = {}  # unreadable: rebuilt, and overwritten on save

    def get(self, digest: str) -> np.ndarray | None:
        """The vectors saved for ``digest``, or ``None``."""
        self._load()
        return self._entries.get(digest)

    def put(self, digest: str, vectors: np.ndarray) -> None:
        """Keep ``vectors`` for ``digest`` (written by :meth:`save`)."""
        self._load()
        self._entries[digest] = vectors
        self.changed = True

    def save(self, current: set[str]) -> None:
        """Write the store atomically when it changed, keeping ``current`` and a few others."""
        if self.path is None or not self.changed:
            return
        keep = [k for k in self._entries if k in current]
        keep += [k for k in self._entries if k not in current][-KEEP_EXTRA:]
        rows = [self._entries[k] for k in keep]
        width = next((r.shape[1] for r in rows if r.ndim == 2 and r.shape[1]), 0)
        matrix = (
            np.concatenate([r.reshape(len(r), width) for r in rows]).astype(np.float32)
            if rows
            else np.zeros((0, width), np.float32)
        )
        offsets = np.cumsum([0, *(len(r) for r in rows)]).astype(np.int64)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".vectors-", dir=self.path.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, format=np.array(FORMAT), keys=np.array(keep, dtype=str),
                         offsets=offsets, matrix=matrix)  # fmt: skip
            os.replace(temporary, self.path)  # readers see the old file or the new one
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        self.changed = False
