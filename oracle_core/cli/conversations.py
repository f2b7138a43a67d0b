"""Conversations the terminal starts: each ``oracle ask`` and ``oracle chat`` opens a fresh
thread unless told to continue one, as llm does; ``-c`` continues the most recent of them.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oracle_core.store.base import Checkpointer

ASK_THREAD_PREFIX = "ask-"
"""How the id of a conversation ``oracle ask`` started begins."""

CHAT_THREAD_PREFIX = "chat-"
"""How the id of a conversation ``oracle chat`` started begins."""

PREFIXES = (ASK_THREAD_PREFIX, CHAT_THREAD_PREFIX)
"""The conversations ``-c`` may continue: those the terminal started."""


def new_conversation(prefix: str) -> str:
    """A fresh thread id: ``prefix`` then the local time and a random suffix
    (``chat-20261207-142301-a1b2c3``)."""
    return f"{prefix}{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


async def latest_conversation(store: Checkpointer) -> str | None:
    """The most recently updated conversation started by ``oracle ask`` or ``oracle chat``."""
    return next((t for t in await store.threads() if t.startswith(PREFIXES)), None)
