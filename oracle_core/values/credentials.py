"""What a store keeps of a credential: who it is for, and the sealed value only."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CredentialRecord:
    """One stored credential, as :meth:`Checkpointer.credentials` lists it.

    Attributes:
        plugin: the plugin that declares the connection.
        name: the connection's name.
        user_id: whose it is; ``""`` for a shared connection.
        created_at: when it was first stored (Unix seconds).
        updated_at: when it was last set (Unix seconds).
        sealed: the encrypted value (see :class:`~oracle_core.credentials.vault.Vault`);
            ``""`` in listings, which never carry it. Left out of the repr.
    """

    plugin: str
    name: str
    user_id: str
    created_at: float
    updated_at: float
    sealed: str = field(default="", repr=False, compare=False)
