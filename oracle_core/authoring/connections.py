"""What a plugin declares about a credential it needs: :class:`Connection`."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ConnectionKind = Literal["api_key", "oauth2"]
"""How a credential is obtained: pasted by a person (``api_key``) or through an OAuth flow
that the plugin's own HTTP route completes (``oauth2``)."""

CONNECTION_KINDS: tuple[ConnectionKind, ...] = ("api_key", "oauth2")

CONNECTION_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
"""A connection's name: lowercase, 1 to 64 characters, starting with a letter."""


def check_connection_name(value: str) -> str:
    """Return ``value`` if it is a valid connection name.

    Raises:
        ValueError: saying what a valid name looks like, with a suggestion.
    """
    if not isinstance(value, str) or not CONNECTION_NAME.fullmatch(value):
        text = value if isinstance(value, str) else repr(value)
        suggestion = re.sub(r"[^a-z0-9_-]", "_", text.strip().lower()).strip("-_")[:64]
        if not suggestion or not suggestion[0].isalpha():
            suggestion = f"c_{suggestion}"[:64].rstrip("-_") or "api_key"
        raise ValueError(
            f"{text[:80]!r} is not a valid connection name: use 1 to 64 lowercase letters, "
            f"digits, '-' and '_', starting with a letter (for example {suggestion!r})"
        )
    return value


class Connection(BaseModel):
    """A credential a plugin needs, declared in ``PluginManifest(connections=[...])``.

    A tool names the connections it needs (``@tool(connections=["github"])``) and reads
    them with :meth:`ToolContext.credential <oracle_core.ToolContext.credential>`. When a
    call needs one that is not set, the run stops as ``waiting_for_connection`` until an
    operator (or the plugin's OAuth route) supplies it; see docs/connections.md.

    Attributes:
        name: unique within the plugin, ``[a-z][a-z0-9_-]*`` (at most 64 characters).
        kind: ``"api_key"`` (a person pastes it) or ``"oauth2"`` (the plugin's route
            completes an OAuth flow and supplies the token).
        per_user: each user has their own credential (default); ``False``: one credential
            shared by every user of the oracle.
        help: what the person supplying it should do (where to get the key, which scopes),
            shown in the waiting operation, ``oracle connections list`` and the prompt.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Unique within the plugin, `[a-z][a-z0-9_-]*`.")
    kind: ConnectionKind = Field(default="api_key", description="`api_key` or `oauth2`.")
    per_user: bool = Field(default=True, description="One credential per user, or one shared.")
    help: str = Field(default="", max_length=2000, description="How to obtain it.")

    @field_validator("name", mode="before")
    @classmethod
    def _check_name(cls, value: object) -> object:
        if isinstance(value, str):
            check_connection_name(value)
        return value

    def scope(self, user_id: str) -> str:
        """The key a credential of this connection is stored under for ``user_id``.

        A per-user connection is stored under the user's id, a shared one under ``""``
        (no user id may be empty, so the two never meet).
        """
        return user_id if self.per_user else ""
