"""Counting tokens offline (``o200k_base``), without importing litellm.

litellm ships tiktoken's encoding files; :func:`~oracle_core.environment.prepare_tokenizer`
points ``TIKTOKEN_CACHE_DIR`` at them, so no download is ever attempted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from oracle_core.environment import prepare_tokenizer
from oracle_core.values.attachments import IMAGE_TOKENS, without_images
from oracle_core.values.bpe import shipped_ranks

ENCODING = "o200k_base"


def _encoding() -> Any:
    prepare_tokenizer()
    import tiktoken

    return tiktoken.get_encoding(ENCODING)  # tiktoken keeps one loaded copy per process


LONG_TEXT = 16_384
"""Characters from which a text is counted by tiktoken's encoder (faster on long texts once
built) rather than by :mod:`oracle_core.values.bpe` (no half-second build first)."""


def count_tokens(text: str) -> int:
    """Tokens in ``text`` under ``o200k_base``: by :mod:`oracle_core.values.bpe` for a text
    under :data:`LONG_TEXT` characters, else (or when it declines) by tiktoken; the same
    count either way."""
    if len(text) < LONG_TEXT and (ranks := shipped_ranks()) is not None:
        counted = ranks.count(text)
        if counted is not None:
            return counted
    return len(_encoding().encode(text, disallowed_special=()))


def count_message_tokens(message: Mapping[str, Any]) -> int:
    """Tokens of one chat message as the model sees it: its public keys as compact JSON.

    Keys starting with ``_`` are the core's bookkeeping and are never sent, so never counted;
    an attached image counts as :data:`~oracle_core.values.attachments.IMAGE_TOKENS`.
    """
    public = {k: v for k, v in message.items() if not k.startswith("_")}
    images = 0
    if isinstance(public.get("content"), list):
        public["content"], images = without_images(public["content"])
    return count_json_tokens(public) + images * IMAGE_TOKENS


def count_json_tokens(value: Any) -> int:
    """Tokens of ``value`` serialised as compact JSON (how tool schemas are measured)."""
    return count_tokens(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
