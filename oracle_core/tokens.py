"""Counting tokens offline with tiktoken (``o200k_base``), without importing litellm.

litellm ships tiktoken's encoding files; pointing ``TIKTOKEN_CACHE_DIR`` at them means no
download is ever attempted.
"""

from __future__ import annotations

import importlib.util
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

ENCODING = "o200k_base"


def _litellm_tokenizers_dir() -> Path | None:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return folder if folder.is_dir() else None


@cache
def _encoding() -> Any:
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        folder = _litellm_tokenizers_dir()
        if folder is not None:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    import tiktoken

    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Tokens in ``text`` under ``o200k_base``."""
    return len(_encoding().encode(text, disallowed_special=()))


def count_json_tokens(value: Any) -> int:
    """Tokens of ``value`` serialised as compact JSON (how tool schemas are measured)."""
    return count_tokens(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
