"""Connections: credentials a plugin declares, an operator supplies, and a tool reads.

- :mod:`.model`: :class:`Connection`, what a plugin declares in its manifest;
- :mod:`.secret`: :class:`Secret`, a value that never shows itself in a repr, a log or JSON;
- :mod:`.vault`: encryption at rest (Fernet, keys from ``ORACLE_SECRET_KEY``);
- :mod:`.records`: what a store keeps of a credential (sealed, never in clear);
- :mod:`.credentials`: the facade that stores, reads, lists and deletes credentials.

Only the values are imported here; the vault and the facade are imported where used, so
a manifest that declares a connection never pays for ``cryptography``.
"""

from oracle_core.connections.model import CONNECTION_KINDS, Connection, ConnectionKind
from oracle_core.connections.secret import Secret

__all__ = ["CONNECTION_KINDS", "Connection", "ConnectionKind", "Secret"]
