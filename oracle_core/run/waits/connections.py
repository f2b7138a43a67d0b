"""Connections: the check (a call whose credentials are missing waits) and the supply.

The check is plugged into the runtime's wait hook (:class:`~oracle_core.run.calls.WaitCheck`),
so it runs after the gate and argument validation, for tools that list connections only.
When every credential the tool lists is set, they are put in the call's context (where
``ctx.credential(name)`` reads them) and the call runs; otherwise the call waits as a
``connection`` operation naming what is needed, never holding a value.

The supply side finds what a credential settles: whichever way it arrives
(``Oracle.supply_credential``, ``oracle connections set``, ``PUT
/connections/{plugin}/{name}``, a plugin's own OAuth route), it is sealed and stored here,
and :func:`~oracle_core.run.waits.settle.supply` moves each waiting operation from
``pending`` to ``supplied`` by a compare-and-set and resumes it exactly once. A wait whose
supplier died between that set and the resume is carried on by the next supply of the
same credential (:func:`left_over`).
"""

from __future__ import annotations

import logging
import shlex
import time
from typing import TYPE_CHECKING, Literal

from oracle_core.authoring.secrets import Secret
from oracle_core.credentials.sealed import Credentials, find_connection
from oracle_core.run.calls import PreparedCall, Wait

if TYPE_CHECKING:
    from oracle_core.plugins.registry import BoundTool, Registry
    from oracle_core.store.operations import OperationStore
    from oracle_core.values.operations import Operation

log = logging.getLogger("oracle_core.authoring.connections")


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
                f"tool {call.bound.name!r} needs connection {first.name!r} of plugin "
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


async def store_credential(
    credentials: Credentials,
    registry: Registry,
    plugin: str,
    name: str,
    value: str | Secret,
    user_id: str,
) -> str:
    """Seal and store a credential of a declared connection; returns its scope (``""``: shared).

    Raises:
        UnknownConnectionError: when no loaded plugin ``plugin`` declares ``name``.
        InvalidCredentialError: for an empty, too long or multi-line value, or a bad user id.
        SecretKeyError: when ``ORACLE_SECRET_KEY`` is missing or invalid (nothing is stored).
    """
    connection = find_connection(registry, plugin, name)
    scope = await credentials.set(plugin, connection, value, user_id)
    log.info(
        "credential set: connection %r of plugin %r (%s)",
        name,
        plugin,
        f"user {scope!r}" if scope else "shared",
    )
    return scope


def waits_on(operation: Operation, plugin: str, name: str, scope: str) -> bool:
    """Whether ``operation`` waits for this connection and scope (``""``: shared)."""
    details = operation.details
    return (
        operation.kind == "connection"
        and operation.plugin == plugin
        and details.get("connection") == name
        and (scope == "" or details.get("user_id") == scope)
    )


async def waiting(
    store: OperationStore, plugin: str, name: str, scope: str, status: str
) -> list[Operation]:
    """The waits for this connection and scope in ``status`` (``pending``, ``supplied``)."""
    found = await store.list_operations(kind="connection", status=status)
    return [op for op in found if waits_on(op, plugin, name, scope)]


def left_over(supplied: list[Operation], grace: float) -> list[Operation]:
    """The supplied waits never carried on: their supplier died before resuming them.

    ``grace`` (the lease time to live) keeps a supplier that is resuming one right now
    out of the way; the resume's claim would keep the run to one resume anyway.
    """
    now = time.time()
    return [op for op in supplied if op.resumed_at is None and op.updated_at < now - grace]
