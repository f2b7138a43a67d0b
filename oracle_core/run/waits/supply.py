"""Supplying a credential: seal and store it, then resume the runs waiting on it, once each.

Whichever way a credential arrives (``Oracle.supply_credential``, ``oracle connections
set``, ``PUT /connections/{plugin}/{name}``, or a plugin's own OAuth route calling
``oracle.supply_credential``), it ends here. Each waiting ``connection`` operation is moved
from ``pending`` to ``supplied`` by a compare-and-set in the store, and only the caller
whose set succeeded resumes its run (through the runtime's claim), so two supplies, two
processes or a retry never run the waiting call twice. A wait whose supplier died between
that set and the resume is carried on by the next supply of the same credential.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Protocol

from oracle_core.authoring.secrets import Secret
from oracle_core.credentials.sealed import Credentials, find_connection

if TYPE_CHECKING:
    from oracle_core.plugins.registry import Registry
    from oracle_core.store.base import Checkpointer
    from oracle_core.values.limits import RunLimits
    from oracle_core.values.operations import Operation
    from oracle_core.values.result import RunResult


class SupplyHost(Protocol):
    """What supplying a credential needs of the oracle (which satisfies it)."""

    @property
    def registry(self) -> Registry:
        """The plugins, to find the connection's declaration."""

    @property
    def credentials(self) -> Credentials:
        """Where credentials are sealed and kept."""

    @property
    def checkpointer(self) -> Checkpointer:
        """The store the waiting operations are in."""

    limits: RunLimits

    async def resume_operation(self, operation_id: str) -> RunResult:
        """Resume the run an operation waits in (once, whoever asks)."""


log = logging.getLogger("oracle_core.authoring.connections")


def waits_on(operation: Operation, plugin: str, name: str, scope: str) -> bool:
    """Whether ``operation`` waits for this connection and scope (``""``: shared)."""
    details = operation.details
    return (
        operation.kind == "connection"
        and operation.plugin == plugin
        and details.get("connection") == name
        and (scope == "" or details.get("user_id") == scope)
    )


def left_over(operation: Operation, now: float, grace: float) -> bool:
    """Whether a supplied wait was never carried on: its supplier died before resuming it.

    ``grace`` (the lease time to live) keeps a supplier that is resuming it right now
    out of the way; the runtime's claim would keep the run to one resume anyway.
    """
    return operation.resumed_at is None and operation.updated_at < now - grace


async def supply_credential(
    oracle: SupplyHost, plugin: str, name: str, value: str | Secret, *, user_id: str
) -> list[RunResult]:
    """Store the credential and resume every run waiting on it; see :meth:`Oracle.supply_credential`.

    Raises:
        UnknownConnectionError: when no loaded plugin ``plugin`` declares ``name``.
        InvalidCredentialError: for an empty, too long or multi-line value, or a bad user id.
        SecretKeyError: when ``ORACLE_SECRET_KEY`` is missing or invalid (nothing is stored).
    """
    connection = find_connection(oracle.registry, plugin, name)
    scope = await oracle.credentials.set(plugin, connection, value, user_id)
    log.info(
        "credential set: connection %r of plugin %r (%s)",
        name,
        plugin,
        f"user {scope!r}" if scope else "shared",
    )
    store = oracle.checkpointer
    waiting = [
        op
        for op in await store.list_operations(kind="connection", status="pending")
        if waits_on(op, plugin, name, scope)
    ]
    results: list[RunResult] = []
    for operation in waiting:
        _, changed = await store.update_operation(
            operation.id, expect={"pending"}, status="supplied"
        )
        if changed:  # this caller won the compare-and-set: it alone resumes the run
            results.append(await oracle.resume_operation(operation.id))
    now, grace = time.time(), oracle.limits.lease_ttl
    for operation in await store.list_operations(kind="connection", status="supplied"):
        if waits_on(operation, plugin, name, scope) and left_over(operation, now, grace):
            log.warning("resuming %s, supplied earlier but never resumed", operation.id)
            results.append(await oracle.resume_operation(operation.id))
    return results
