"""Counting tokens offline with tiktoken (``o200k_base``), without importing litellm.

litellm ships tiktoken's encoding files; :func:`~oracle_core.environment.prepare_tokenizer`
points ``TIKTOKEN_CACHE_DIR`` at them, so no download is ever attempted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from oracle_core.environment import prepare_tokenizer
from oracle_core.values.attachments import IMAGE_TOKENS, without_images

ENCODING = "o200k_base"


def _encoding() -> Any:
    prepare_tokenizer()
    import tiktoken

    return tiktoken.get_encoding(ENCODING)  # tiktoken keeps one loaded copy per process


def count_tokens(text: str) -> int:
    """Tokens in ``text`` under ``o200k_base``."""
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
