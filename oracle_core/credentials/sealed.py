"""The credential store: seal, save, open, list and delete credentials of declared connections.

It sits between the oracle (and its tool executor, CLI and HTTP API) and the
:class:`~oracle_core.Checkpointer`, which keeps only sealed values, so every process
sharing the store sees the same credentials. Clear text exists only in the
:class:`~oracle_core.authoring.connections.Secret` a tool reads; nothing here logs a value or puts
one in an exception.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oracle_core.authoring.connections import Connection, ConnectionKind
from oracle_core.authoring.secrets import Secret
from oracle_core.errors import InvalidCredentialError, InvalidUserIdError, UnknownConnectionError
from oracle_core.values import ids
from oracle_core.values.credentials import CredentialRecord

if TYPE_CHECKING:
    from oracle_core.credentials.vault import Vault
    from oracle_core.plugins.registry import Registry
    from oracle_core.store.credentials import CredentialStore

MAX_VALUE_CHARS = 16_384
"""The longest credential accepted (OAuth tokens with a refresh token fit easily)."""

MAX_USER_ID_CHARS = ids.MAX_USER_ID
"""The longest user id accepted (as every entry: :mod:`oracle_core.values.ids`)."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_user_id(user_id: str) -> str:
    """Return ``user_id`` if credentials may be kept for it: the one rule of user ids
    (:func:`oracle_core.values.ids.check_user_id`), as a credential's error.

    Raises:
        InvalidCredentialError: naming what is wrong and the rule.
    """
    try:
        return ids.check_user_id(user_id)
    except InvalidUserIdError as error:
        raise InvalidCredentialError(
            f"the user id is not valid for a credential: {error}"
        ) from None


def scope_of(connection: Connection, user_id: str) -> str:
    """The scope ``connection``'s credential for ``user_id`` is stored under (``""``: shared).

    Raises:
        InvalidCredentialError: when the connection is per-user and ``user_id`` is invalid.
    """
    return connection.scope(check_user_id(user_id) if connection.per_user else user_id)


def check_value(value: str | Secret, plugin: str, name: str) -> str:
    """The clear text of ``value`` if it may be stored; the error never shows it.

    Raises:
        InvalidCredentialError: when it is empty, too long or holds control characters.
    """
    text = value.reveal() if isinstance(value, Secret) else value
    what = f"the value for connection {name!r} of plugin {plugin!r}"
    if not isinstance(text, str):
        raise InvalidCredentialError(f"{what} must be text, not {type(text).__name__}")
    if not text.strip():
        raise InvalidCredentialError(f"{what} is empty: paste the credential itself")
    if len(text) > MAX_VALUE_CHARS:
        raise InvalidCredentialError(
            f"{what} is {len(text)} characters, over the limit of {MAX_VALUE_CHARS}"
        )
    if _CONTROL.search(text):
        raise InvalidCredentialError(
            f"{what} holds control characters (a newline, a tab, ...): paste it on one line"
        )
    return text


def find_connection(registry: Registry, plugin: str, name: str) -> Connection:
    """The connection ``name`` that ``plugin`` declares.

    Raises:
        UnknownConnectionError: naming the plugin and what it declares (or the plugins
            that declare connections, when the plugin is unknown).
    """
    found = registry.get(plugin) if isinstance(plugin, str) else None
    if found is None:
        having = [p.name for p in registry if p.manifest.connections]
        close = difflib.get_close_matches(str(plugin), having, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownConnectionError(
            f"no plugin {str(plugin)[:80]!r} is loaded{hint}; plugins with connections: "
            f"{', '.join(having) or 'none'} (see `oracle connections list`)"
        )
    declared = {c.name: c for c in found.manifest.connections}
    if name not in declared:
        close = difflib.get_close_matches(str(name), list(declared), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownConnectionError(
            f"plugin {plugin!r} declares no connection {str(name)[:80]!r}{hint}; it declares: "
            f"{', '.join(declared) or 'none'}"
        )
    return declared[name]


@dataclass(frozen=True)
class ConnectionStatus:
    """Whether one connection is set, for one user (or for everyone, when shared).

    Attributes:
        plugin: the plugin declaring it.
        name: the connection's name.
        kind: ``api_key`` or ``oauth2`` (``None`` for a stored credential of a connection
            no loaded plugin declares any more).
        per_user: whether each user has their own.
        user_id: whose credential this line is about (``None``: a shared connection, or a
            per-user one nobody has set).
        set: whether a credential is stored.
        updated_at: when it was last set (Unix seconds), when it is.
        help: how to obtain it.
        declared: whether a loaded plugin declares it.
    """

    plugin: str
    name: str
    kind: ConnectionKind | None
    per_user: bool
    user_id: str | None
    set: bool
    updated_at: float | None = None
    help: str = ""
    declared: bool = True

    def to_json(self) -> dict[str, Any]:
        """The line as JSON data (never a value: a store listing has none)."""
        return {
            "plugin": self.plugin,
            "connection": self.name,
            "kind": self.kind,
            "per_user": self.per_user,
            "user_id": self.user_id,
            "set": self.set,
            "updated_at": self.updated_at,
            "help": self.help,
            "declared": self.declared,
        }


def statuses(
    registry: Registry, records: list[CredentialRecord], user_id: str | None = None
) -> list[ConnectionStatus]:
    """Every declared connection with whether it is set, and stored ones no plugin declares.

    Without ``user_id`` a per-user connection gets one line per user who set it (one
    ``set: false`` line when nobody has); with it, one line for that user.
    """
    stored: dict[tuple[str, str], list[CredentialRecord]] = {}
    for record in records:
        stored.setdefault((record.plugin, record.name), []).append(record)
    lines: list[ConnectionStatus] = []
    for plugin in registry:
        for connection in plugin.manifest.connections:
            rows = stored.pop((plugin.name, connection.name), [])
            if connection.per_user:
                rows = [r for r in rows if r.user_id and user_id in (None, r.user_id)]
            else:
                rows = [r for r in rows if r.user_id == ""]

            if rows:
                lines += [_line(plugin.name, connection, r, r.user_id or None) for r in rows]
            else:
                who = user_id if connection.per_user else None
                lines.append(_line(plugin.name, connection, None, who))
    for (plugin_name, name), rows in sorted(stored.items()):
        for record in rows:
            if user_id in (None, record.user_id) or record.user_id == "":
                lines.append(
                    ConnectionStatus(
                        plugin_name,
                        name,
                        None,
                        bool(record.user_id),
                        record.user_id or None,
                        True,
                        record.updated_at,
                        declared=False,
                    )
                )
    return lines


def _line(
    plugin: str, connection: Connection, record: CredentialRecord | None, who: str | None
) -> ConnectionStatus:
    return ConnectionStatus(
        plugin,
        connection.name,
        connection.kind,
        connection.per_user,
        who,
        record is not None,
        record.updated_at if record else None,
        connection.help,
    )


class Credentials:
    """Sealed credentials in a store, opened with the operator's key.

    The key is read (and checked) the first time a value is sealed or opened, so listing
    and deleting work without it.

    Args:
        store: where the sealed values live (shared by every process of the oracle).
        env: the environment holding ``ORACLE_SECRET_KEY``.
    """

    def __init__(self, store: CredentialStore, env: Mapping[str, str]) -> None:
        self.store = store
        self._env = env
        self._vault: Vault | None = None

    def __repr__(self) -> str:
        return f"<Credentials store={type(self.store).__name__}>"

    @property
    def vault(self) -> Vault:
        """The vault for ``ORACLE_SECRET_KEY``, made on first use.

        Raises:
            SecretKeyError: when the key is missing or invalid.
        """
        if self._vault is None:
            from oracle_core.credentials.vault import Vault

            self._vault = Vault.from_env(self._env)
        return self._vault

    async def get(self, plugin: str, connection: Connection, user_id: str) -> Secret | None:
        """The credential of ``connection`` for ``user_id`` (shared ones: for everyone).

        Raises:
            SecretKeyError: when one is stored but the key is missing or invalid.
            CredentialUnreadableError: when it is stored but cannot be opened.
            InvalidCredentialError: when a per-user connection is asked for an invalid user.
        """
        scope = scope_of(connection, user_id)
        record = await self.store.load_credential(plugin, connection.name, scope)
        if record is None:
            return None
        return self.vault.open(plugin, connection.name, scope, record.sealed)

    async def set(
        self, plugin: str, connection: Connection, value: str | Secret, user_id: str
    ) -> str:
        """Seal and store ``value``; returns the scope it was stored under (``""``: shared).

        Raises:
            InvalidCredentialError: for an empty, too long or multi-line value, or a bad user id.
            SecretKeyError: when the key is missing or invalid (nothing is stored).
        """
        text = check_value(value, plugin, connection.name)
        scope = scope_of(connection, user_id)
        sealed = self.vault.seal(plugin, connection.name, scope, text)
        await self.store.save_credential(plugin, connection.name, scope, sealed)
        return scope

    async def delete(self, plugin: str, connection: Connection, user_id: str) -> bool:
        """Remove the credential of ``connection`` for ``user_id``; whether there was one."""
        scope = scope_of(connection, user_id)
        return await self.store.delete_credential(plugin, connection.name, scope)

    async def delete_named(self, registry: Registry, plugin: str, name: str, user_id: str) -> bool:
        """:meth:`delete` by name; a connection no loaded plugin declares is looked up in the
        store (``user_id``'s credential, else the shared one).

        Raises:
            UnknownConnectionError: when it is neither declared nor stored.
        """
        try:
            connection = find_connection(registry, plugin, name)
        except UnknownConnectionError:
            for scope in (user_id, ""):
                if await self.store.delete_credential(plugin, name, scope):
                    return True
            raise
        return await self.delete(plugin, connection, user_id)

    async def rotate(self) -> int:
        """Seal every stored credential again with the first key; how many were re-sealed.

        Raises:
            CredentialUnreadableError: when one cannot be opened with any key (the others
                already re-sealed stay so; nothing is lost).
        """
        count = 0
        for listed in await self.store.credentials():
            record = await self.store.load_credential(listed.plugin, listed.name, listed.user_id)
            if record is None:
                continue  # deleted meanwhile
            sealed = self.vault.rotate(record.sealed)
            await self.store.save_credential(record.plugin, record.name, record.user_id, sealed)
            count += 1
        return count
