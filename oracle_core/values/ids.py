"""The one rule for thread ids and user ids, shared by every entry: the CLI, the server (its
native API, ``/v1/chat/completions``, ``/v1/responses``, ``/mcp``) and ``Oracle.run``.

Ids are saved and shown as they are (in the store, the usage ledger, log lines and URLs), so
an id is refused, never changed: an id cleaned on the way in could become another's.
"""

from __future__ import annotations

import re

from oracle_core.errors import InvalidThreadIdError, InvalidUserIdError

THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
"""Thread ids the CLI and the server accept: 1 to 128 of letters, digits and ``._:@-``, not
leading with punctuation (so an id is always safe in a URL path segment and a log line)."""

RULE = "use 1 to 128 letters, digits and the characters . _ : @ -, starting with a letter or digit"
"""The rule of :data:`THREAD_ID` in words, for error messages."""

MAX_USER_ID = 200
"""The longest user id, in characters."""

USER_RULE = (
    f"use 1 to {MAX_USER_ID} characters, not only spaces, none of them a control character "
    "(U+0000-001F, U+007F-009F) or a lone surrogate (U+D800-DFFF)"
)
"""The rule of :func:`check_user_id` in words, for error messages."""

_UNWRITABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""What no user id holds: controls (they break log lines and terminals) and lone surrogates
(no UTF-8 encodes them, so no store could write the id)."""


def check_thread_id(thread_id: str) -> str:
    """Return ``thread_id`` when it fits :data:`THREAD_ID`.

    Raises:
        InvalidThreadIdError: naming the (shortened) id and the rule.
    """
    if not isinstance(thread_id, str) or not THREAD_ID.fullmatch(thread_id):
        shown = thread_id[:140] if isinstance(thread_id, str) else thread_id
        raise InvalidThreadIdError(f"thread id {shown!r} is not valid: {RULE}")
    return thread_id


def check_user_id(user_id: str, field: str = "user_id") -> str:
    """Return ``user_id`` when it is 1 to :data:`MAX_USER_ID` characters, not only spaces,
    none a control character or a lone surrogate.

    Args:
        user_id: the id as the caller gave it.
        field: the name the caller gave it under (``user`` on the OpenAI endpoints), for the
            message.

    Raises:
        InvalidUserIdError: naming the field, what is wrong and the rule.
    """
    if not isinstance(user_id, str):
        raise InvalidUserIdError(f"{field} must be a string: {USER_RULE}")
    if not 1 <= len(user_id) <= MAX_USER_ID:
        raise InvalidUserIdError(f"{field} is {len(user_id)} characters long: {USER_RULE}")
    if not user_id.strip():
        raise InvalidUserIdError(f"{field} is only spaces: {USER_RULE}")
    found = _UNWRITABLE.search(user_id)
    if found is not None:
        # repr escapes the character, so the message itself is always writable.
        raise InvalidUserIdError(
            f"{field} {user_id[:60]!r} holds {found.group()!r} at character {found.start()}: "
            f"{USER_RULE}"
        )
    return user_id
