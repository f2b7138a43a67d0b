"""The one rule for thread ids, shared by the CLI and the server."""

from __future__ import annotations

import re

from oracle_core.errors import InvalidThreadIdError

THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
"""Thread ids the CLI and the server accept: 1 to 128 of letters, digits and ``._:@-``, not
leading with punctuation (so an id is always safe in a URL path segment and a log line)."""

RULE = "use 1 to 128 letters, digits and the characters . _ : @ -, starting with a letter or digit"
"""The rule of :data:`THREAD_ID` in words, for error messages."""


def check_thread_id(thread_id: str) -> str:
    """Return ``thread_id`` when it fits :data:`THREAD_ID`.

    Raises:
        InvalidThreadIdError: naming the (shortened) id and the rule.
    """
    if not THREAD_ID.fullmatch(thread_id):
        raise InvalidThreadIdError(f"thread id {thread_id[:140]!r} is not valid: {RULE}")
    return thread_id
