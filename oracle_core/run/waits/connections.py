"""The connection check: a call whose credentials are missing waits for them.

Plugged into the runtime's wait hook (:class:`~oracle_core.run.waits.checks.WaitCheck`),
so it runs after the gate and argument validation, for tools that list connections only.
When every credential the tool lists is set, they are put in the call's context (where
``ctx.credential(name)`` reads them) and the call runs; otherwise the call waits as a
``connection`` operation naming what is needed, never holding a value.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Literal

from oracle_core.authoring.secrets import Secret
from oracle_core.credentials.sealed import Credentials
from oracle_core.run.waits.checks import PreparedCall, Wait

if TYPE_CHECKING:
    from oracle_core.plugins.registry import BoundTool


class ConnectionCheck:
    """Waits for the credentials a tool lists (``@tool(connections=[...])``).

    Args:
        credentials: the oracle's credential store.
    """

    kind: Literal["connection"] = "connection"

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials

    def applies(self, bound: BoundTool) -> bool:
        """Only tools that list connections can wait for one."""
        return bool(bound.tool.connections)

    async def check(self, call: PreparedCall) -> Wait | None:
        """Fill the call's credentials, or say which connection it waits for.

        Raises:
            SecretKeyError: when a credential is stored but ``ORACLE_SECRET_KEY`` is
                missing or invalid (the call is refused: it neither runs nor waits).
            CredentialUnreadableError: when a stored credential cannot be opened.
        """
        plugin = call.bound.plugin
        declared = {c.name: c for c in plugin.manifest.connections}
        user_id = call.context.user_id
        found: dict[str, Secret] = {}
        missing = []
        for name in call.bound.tool.connections:
            connection = declared[name]  # the validator refuses a tool listing an undeclared one
            value = await self.credentials.get(plugin.name, connection, user_id)  # checks user_id
            if value is None:
                missing.append(connection)
            else:
                found[name] = value
        if not missing:
            # The context the call runs with: a fresh dict per call (see ToolContext).
            filled = call.context.credentials
            if isinstance(filled, dict):
                filled.update(found)
            return None
        first = missing[0]
        whose = f"user {user_id!r}" if first.per_user else "every user (shared)"
        return Wait(
            kind="connection",
            reason=(
                f"tool {call.bound.tool.name!r} needs connection {first.name!r} of plugin "
                f"{plugin.name!r} ({first.kind}) for {whose}: set it with "
                f"`oracle connections set {plugin.name} {first.name}"
                + (f" --user {shlex.quote(user_id)}`" if first.per_user else "`")
            ),
            details={
                "connection": first.name,
                "connection_kind": first.kind,
                "per_user": first.per_user,
                "help": first.help,
                "missing": [c.name for c in missing],
                "user_id": user_id if first.per_user else None,
            },
        )
