"""How the SQLite store reads the JSON it saved, cleaning rows of an older release."""

from __future__ import annotations

import json
import re
from typing import Any

from oracle_core.store.saving import to_json

SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A surrogate spelled as an escape (``json.dumps``' default ``ensure_ascii=True``).

Only rows saved so by an older release can load as invalid text (the column itself is
always valid UTF-8).
"""


def from_json(text: str) -> tuple[Any, str | None]:
    """Parse stored JSON, cleaned; with its clean text when the stored text must be rewritten."""
    value = json.loads(text)
    if SURROGATE_ESCAPE.search(text) is None:
        return value, None
    fixed, clean = to_json(value)
    return (value, None) if clean is value else (clean, fixed)
