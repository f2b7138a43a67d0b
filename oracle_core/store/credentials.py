"""The credentials facet of a store: sealed values only, never clear text.

Values are sealed by :mod:`oracle_core.credentials.vault` before they reach a store.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from oracle_core.values.credentials import CredentialRecord
from oracle_core.values.text import clean_text


class CredentialStore(Protocol):
    """Keeps the sealed credential of each plugin's connection, per user or shared."""

    @abstractmethod
    async def save_credential(self, plugin: str, name: str, user_id: str, sealed: str) -> None:
        """Store the sealed credential of connection ``name`` of ``plugin`` for ``user_id``.

        Inserts or replaces, atomically; ``created_at`` is kept on a replace and
        ``updated_at`` becomes now. ``user_id`` is ``""`` for a shared connection.
        """

    @abstractmethod
    async def load_credential(
        self, plugin: str, name: str, user_id: str
    ) -> CredentialRecord | None:
        """The stored credential (with its ``sealed`` value), or ``None`` when there is none."""

    @abstractmethod
    async def delete_credential(self, plugin: str, name: str, user_id: str) -> bool:
        """Remove a stored credential; ``True`` when there was one."""

    @abstractmethod
    async def credentials(
        self, *, plugin: str | None = None, user_id: str | None = None
    ) -> list[CredentialRecord]:
        """The stored credentials, without their values (``sealed`` is ``""``).

        Ordered by plugin, name and user id; ``plugin`` and ``user_id`` narrow the list.
        """


def credential_key(plugin: str, name: str, user_id: str) -> tuple[str, str, str]:
    """The cleaned ``(plugin, name, user_id)`` a credential is stored under."""
    return clean_text(plugin), clean_text(name), clean_text(user_id)
